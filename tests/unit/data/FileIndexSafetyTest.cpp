// The image folder index as untrusted input: an index with a valid checksum and current folder
// stamps that lists a path leaving the root (absolute, "..", another class's folder) is not used,
// with one warning naming the entry, and no file outside the root is listed; an index that is a
// FIFO or larger than kFolderIndexMaxBytes is ignored the same way, without blocking or loading it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/FileIndex.h"

namespace fixres::data::index_safety_test {
namespace {

namespace fs = std::filesystem;

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

FileIndexOptions indexOn() {
  FileIndexOptions o;
  o.enabled = true;
  return o;
}

// root/a/1.jpg and root/b/2.jpg, folders an hour old, indexed; and `outside`/b.jpg next to root.
struct Tree {
  std::string root, outside;
};
Tree makeIndexedTree() {
  const std::string base = fixres::testing::makeTempDir("fixres_index_safety_");
  Tree t{base + "/data/train", base + "/other"};
  for (const std::string f : {t.root + "/a/1.jpg", t.root + "/b/2.jpg", t.outside + "/b.jpg"}) {
    fs::create_directories(fs::path(f).parent_path());
    std::ofstream(f) << "x";
  }
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const std::string d : {t.root + "/a", t.root + "/b", t.root}) fs::last_write_time(d, old);
  FileIndexReport report;
  openImageFolder(t.root, indexOn(), &report);
  EXPECT_TRUE(report.saved) << report.why;
  return t;
}

// Opens root with the index on; returns stderr. The listing must be the plain scan's.
std::string openCapturingStderr(const std::string& root, FileIndexReport* report) {
  ::testing::internal::CaptureStderr();
  auto indexed = openImageFolder(root, indexOn(), report);
  const std::string err = ::testing::internal::GetCapturedStderr();
  auto plain = openImageFolder(root);
  EXPECT_EQ(indexed->size(), plain->size());
  for (size_t i = 0; i < indexed->size() && i < plain->size(); ++i)
    EXPECT_EQ(indexed->name(i), plain->name(i));
  return err;
}

TEST(DataFileIndexSafety, AnEntryLeavingTheRootMakesTheIndexUnused) {
  const Tree t = makeIndexedTree();
  const std::string path = t.root + "/.fixres-index";
  std::string why;
  const auto good = decodeFolderIndex(readAll(path), &why);
  ASSERT_TRUE(good.has_value()) << why;
  ASSERT_EQ(good->files.size(), 2u);
  const std::string up = fs::relative(t.outside + "/b.jpg", t.root).string();  // ../../other/b.jpg
  const std::vector<std::string> craftedPaths = {
      up,         "a/" + up,    fs::absolute(t.outside + "/b.jpg").string(), "b/2.jpg", "a/./1.jpg",
      "a//1.jpg", "a/sub/1.jpg"};
  for (const std::string& crafted : craftedPaths) {
    SCOPED_TRACE(crafted);
    FolderIndex bad = *good;
    bad.files[0].path = crafted;  // label 0: class "a"
    const std::string bytes = encodeFolderIndex(bad);
    EXPECT_FALSE(decodeFolderIndex(bytes, &why).has_value());
    EXPECT_NE(why.find("'" + crafted + "'"), std::string::npos) << why;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    FileIndexReport report;
    const std::string err = openCapturingStderr(t.root, &report);
    EXPECT_FALSE(report.usedIndex);
    EXPECT_NE(err.find("file entry '" + crafted + "'"), std::string::npos) << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_TRUE(report.saved);  // rewritten from the scan
  }
  // Folder stamps, classes and left-out examples are checked the same way.
  FolderIndex bad = *good;
  bad.folders[0].path = "../other";
  EXPECT_FALSE(decodeFolderIndex(encodeFolderIndex(bad), &why).has_value());
  EXPECT_NE(why.find("folder entry '../other'"), std::string::npos) << why;
  bad = *good;
  bad.undecoded = {1, "../../etc/passwd.bmp"};
  EXPECT_FALSE(decodeFolderIndex(encodeFolderIndex(bad), &why).has_value());
  bad = *good;
  bad.classes[0] = "..";
  EXPECT_FALSE(decodeFolderIndex(encodeFolderIndex(bad), &why).has_value());
  EXPECT_NE(why.find("class entry '..'"), std::string::npos) << why;
}

TEST(DataFileIndexSafety, AFifoOrOversizeIndexIsIgnoredWithOneWarning) {
  const Tree t = makeIndexedTree();
  const std::string path = t.root + "/.fixres-index";
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto done = std::async(std::launch::async, [&] {
    FileIndexReport report;
    const std::string err = openCapturingStderr(t.root, &report);
    EXPECT_FALSE(report.usedIndex);
    EXPECT_NE(err.find("cannot read file index " + path + ": a FIFO"), std::string::npos) << err;
  });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO " << path;
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  done.get();
  EXPECT_TRUE(fs::is_regular_file(path));  // replaced by the rewritten index
  // A sparse 30 GB file: refused by its size, nothing read.
  fs::resize_file(path, uint64_t(30) << 30);
  FileIndexReport report;
  const std::string err = openCapturingStderr(t.root, &report);
  EXPECT_FALSE(report.usedIndex);
  EXPECT_NE(err.find(path + ": 32212254720 bytes, more than the 1073741824"), std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_LT(fs::file_size(path), 4096u);  // rewritten
}

}  // namespace
}  // namespace fixres::data::index_safety_test
