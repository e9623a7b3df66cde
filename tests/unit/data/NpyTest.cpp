// .npy files against NumPy itself: arrays written by numpy are read back with the same values,
// and arrays we write load in numpy with the same values, dtype and shape.
#include "fixres/data/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"

namespace fixres::data {
namespace {

std::string tempDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("fixres_npy_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

int python(const std::string& code) {
  std::string cmd = std::string(FIXRES_PYTHON) + " -c \"" + code + "\"";
  return std::system(cmd.c_str());
}

TEST(Npy, ReadsWhatNumpyWrites) {
  auto d = tempDir("read");
  ASSERT_EQ(python("import numpy as np; np.save('" + d +
                   "/f.npy', np.arange(12, dtype=np.float32).reshape(3,4) / 7); "
                   "np.save('" +
                   d +
                   "/l.npy', np.array([5, -1, 2**40], dtype=np.int64)); "
                   "np.save('" +
                   d + "/u.npy', np.arange(6, dtype=np.uint8).reshape(1,2,3))"),
            0);
  auto f = readNpy(d + "/f.npy");
  EXPECT_EQ(f.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(torch::allclose(f, torch::arange(12, torch::kFloat32).view({3, 4}) / 7));
  auto l = readNpy(d + "/l.npy");
  EXPECT_EQ(l.scalar_type(), torch::kInt64);
  EXPECT_EQ(l[2].item<int64_t>(), int64_t(1) << 40);
  EXPECT_EQ(readNpy(d + "/u.npy").sizes(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Npy, NumpyReadsWhatWeWrite) {
  auto d = tempDir("write");
  writeNpy(d + "/a.npy", torch::arange(10, torch::kFloat32).view({2, 5}) * 0.5);
  writeNpy(d + "/b.npy", torch::tensor({3, 1, 4}, torch::kInt64));
  EXPECT_EQ(python("import numpy as np; a=np.load('" + d + "/a.npy'); b=np.load('" + d +
                   "/b.npy'); "
                   "assert a.dtype==np.float32 and a.shape==(2,5) and "
                   "(a==np.arange(10).reshape(2,5)*0.5).all(); "
                   "assert b.dtype==np.int64 and b.shape==(3,) and list(b)==[3,1,4]"),
            0);
}

TEST(Npy, BadFilesAreDataErrorsNamingTheFile) {
  auto d = tempDir("bad");
  std::ofstream(d + "/text.npy") << "hello";
  EXPECT_THROW(readNpy(d + "/text.npy"), DataError);
  EXPECT_THROW(readNpy(d + "/missing.npy"), DataError);
  auto good = encodeNpy(torch::ones({4, 4}));
  std::ofstream(d + "/trunc.npy", std::ios::binary) << good.substr(0, good.size() - 3);
  try {
    readNpy(d + "/trunc.npy");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("trunc.npy"), std::string::npos);
  }
}

// What numpy.load also rejects: a shape that is not a tuple of integers (a fuzzing finding: it
// reached a memcpy to a null pointer) and a shape far larger than the data (must not allocate).
TEST(Npy, MalformedShapesAreDataErrors) {
  auto finding = readFile(std::string(FIXRES_SOURCE_DIR) +
                          "/fuzz/corpus/npy/regression-empty-shape-memcpy.npy");
  EXPECT_THROW(decodeNpy(finding.data(), finding.size(), "finding.npy"), DataError);
  auto header = [](const std::string& dict) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
    return out + h;
  };
  auto huge =
      header("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000), }") +
      std::string(16, '\0');
  EXPECT_THROW(decodeNpy(huge.data(), huge.size(), "huge.npy"), DataError);
  auto ok =
      header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }") + std::string(16, '\0');
  EXPECT_EQ(decodeNpy(ok.data(), ok.size(), "ok.npy").sizes(), torch::IntArrayRef({2, 2}));
  auto empty = header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }");
  EXPECT_EQ(decodeNpy(empty.data(), empty.size(), "empty.npy").numel(), 0);
}

TEST(Files, AtomicWriteReplacesAndFailureKeepsTheOldFile) {
  auto d = tempDir("atomic");
  writeFileAtomic(d + "/x", "first");
  writeFileAtomic(d + "/x", "second");
  auto v = readFile(d + "/x");
  EXPECT_EQ(std::string(v.begin(), v.end()), "second");
  // A target whose folder does not exist fails cleanly with the path in the message.
  EXPECT_THROW(writeFileAtomic(d + "/no/such/dir/x", "y"), OutputError);
  // No temp file is left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(d)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace fixres::data
