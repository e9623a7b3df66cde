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

#include "../Reference.h"

namespace fixres::data {
namespace {

// A fresh folder per test, removed when the process exits.
std::string tempDir(const std::string& name) {
  return fixres::testing::makeTempDir("fixres_npy_" + name + "_");
}

int python(const std::string& code) {
  std::string cmd = std::string(FIXRES_PYTHON_COMMAND) + " -c \"" + code + "\"";
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

// The header parser against numpy.load itself: for each crafted header, both accept it with the
// same shape or both refuse it. Covers numpy's 10000-byte header limit (a 50 KB header used to
// overflow the stack in the regular-expression parser), quoting, key order, missing and extra
// keys, a shape that is an integer instead of a tuple, and format version 2.
TEST(Npy, HeaderParsingAgreesWithNumpy) {
  auto d = tempDir("headers");
  auto file = [](int major, const std::string& dict, size_t floats) {
    std::string h = dict;
    const size_t pre = major == 1 ? 10 : 12;
    while ((pre + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < pre - 8; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
    return out + h + std::string(floats * 4, '\0');
  };
  const std::string pad(9800, ' '), big(50000, ' ');
  struct Case {
    std::string name, bytes;
  };
  const std::vector<Case> cases = {
      {"plain", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 4)},
      {"double_quotes", file(1, R"({"descr": "<f4", "fortran_order": False, "shape": (3,)})", 3)},
      {"reordered", file(1, "{'shape': (1, 2), 'fortran_order': False, 'descr': '<f4'}", 2)},
      {"no_spaces", file(1, "{'descr':'<f4','fortran_order':False,'shape':(2,2)}", 4)},
      {"scalar", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 1)},
      {"int_shape", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", 4)},
      {"extra_key", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 1)},
      {"no_shape", file(1, "{'descr': '<f4', 'fortran_order': False}", 1)},
      {"unclosed", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2", 4)},
      {"bad_bool", file(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", 1)},
      {"padded_9.8k",
       file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2," + pad + "2), }", 4)},
      {"padded_50k",
       file(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2," + big + "2), }", 4)},
      {"descr_50k",
       file(2, "{'descr': '<f4" + big + "', 'fortran_order': False, 'shape': (1,)}", 1)},
      {"version2", file(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1), }", 3)},
  };
  for (const auto& c : cases) std::ofstream(d + "/" + c.name + ".npy", std::ios::binary) << c.bytes;
  const std::string script = d + "/verdicts.py";
  std::ofstream(script) << "import sys, numpy as np\n"
                           "for name in sys.argv[2:]:\n"
                           "    try:\n"
                           "        a = np.load(sys.argv[1] + '/' + name + '.npy')\n"
                           "        print(name, 'ok', list(a.shape))\n"
                           "    except Exception:\n"
                           "        print(name, 'refused')\n";
  std::string names;
  for (const auto& c : cases) names += " " + c.name;
  const std::string out = d + "/verdicts.txt";
  ASSERT_EQ(std::system(
                (std::string(FIXRES_PYTHON_COMMAND) + " " + script + " " + d + names + " > " + out)
                    .c_str()),
            0);
  std::ifstream in(out);
  std::string line;
  size_t seen = 0;
  for (const auto& c : cases) {
    ASSERT_TRUE(std::getline(in, line)) << "numpy gave no verdict for " << c.name;
    std::string ours;
    try {
      auto t = decodeNpy(c.bytes.data(), c.bytes.size(), c.name + ".npy");
      ours = c.name + " ok [";
      for (int64_t i = 0; i < t.dim(); ++i) ours += (i ? ", " : "") + std::to_string(t.size(i));
      ours += "]";
    } catch (const DataError& e) {
      ours = c.name + " refused";
      EXPECT_NE(std::string(e.what()).find(c.name + ".npy"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ours, line);
    ++seen;
  }
  EXPECT_EQ(seen, 14u);
}

}  // namespace
}  // namespace fixres::data
