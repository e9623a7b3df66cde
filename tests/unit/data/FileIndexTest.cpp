// The image folder index: a listing read from the index equals torchvision's ImageFolder
// (tests/reference/image_folder.py) and a plain scan (samples, order, labels, warnings); any
// added, removed or renamed file or folder makes it rescan; a corrupt or foreign index is
// ignored; a tree that cannot be written keeps its index in the cache folder.
#include "fixres/data/FileIndex.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/data/Dataset.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

// Every folder of the tree an hour old, so a scan right after is not "racy".
void ageFolders(const std::string& root) {
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(root, old);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->is_directory() && !it->is_symlink()) fs::last_write_time(it->path(), old);
  }
}

void touch(const std::string& path) {
  std::ofstream(path) << "x";
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expectSameListing(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.classes(), b.classes());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.name(i), b.name(i)) << i;
    EXPECT_EQ(a.label(i), b.label(i)) << i;
  }
}

FileIndexOptions indexOn(const std::string& cacheDir = "") {
  FileIndexOptions o;
  o.enabled = true;
  o.cacheDir = cacheDir;
  return o;
}

// Opens with the index and checks the listing against a plain scan; returns the report.
FileIndexReport openAndCompare(const std::string& root, const FileIndexOptions& o) {
  FileIndexReport report;
  auto indexed = openImageFolder(root, o, &report);
  auto plain = openImageFolder(root);
  expectSameListing(*indexed, *plain);
  return report;
}

TEST(DataFileIndex, IndexedListingIsTorchvisionsAndThePlainScans) {
  const std::string root = fixres::testing::makeTempDir("fixres_index_");
  const auto ref = nlohmann::json::parse(fixres::testing::runReference("image_folder.py", root));
  ageFolders(root);
  FileIndexReport first, second;
  auto built = openImageFolder(root, indexOn(), &first);
  EXPECT_FALSE(first.usedIndex);
  EXPECT_TRUE(first.saved) << first.why;
  EXPECT_EQ(first.path, root + "/.fixres-index");
  auto read = openImageFolder(root, indexOn(), &second);
  EXPECT_TRUE(second.usedIndex) << second.why;
  EXPECT_FALSE(second.saved);
  EXPECT_EQ(read->classes(), ref["classes"].get<std::vector<std::string>>());
  ASSERT_EQ(read->size(), ref["samples"].size());
  for (size_t i = 0; i < read->size(); ++i) {
    EXPECT_EQ(read->name(i), ref["samples"][i][0].get<std::string>()) << i;
    EXPECT_EQ(read->label(i), ref["samples"][i][1].get<int64_t>()) << i;
  }
  expectSameListing(*read, *openImageFolder(root));
  expectSameListing(*built, *read);
  // Sizes and mtimes recorded are the files' (stat).
  auto index = decodeFolderIndex(readAll(root + "/.fixres-index"), nullptr);
  ASSERT_TRUE(index.has_value());
  ASSERT_EQ(index->files.size(), read->size());
  struct stat st {};
  ASSERT_EQ(::stat(read->name(0).c_str(), &st), 0);
  EXPECT_EQ(index->files[0].size, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(index->files[0].mtimeNs, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
  // A relative root (another spelling of the same tree) gets the same names as a plain scan.
  const std::string cwd = fs::current_path().string();
  fs::current_path(fs::path(root).parent_path());
  const std::string rel = fs::path(root).filename().string() + "/";
  FileIndexReport relReport = openAndCompare(rel, indexOn());
  EXPECT_TRUE(relReport.usedIndex) << relReport.why;
  fs::current_path(cwd);
  fs::remove_all(root);
}

TEST(DataFileIndex, ChangesInTheTreeMakeItRescan) {
  const std::string root = fixres::testing::makeTempDir("fixres_index_change_");
  fs::create_directories(root + "/a/sub");
  fs::create_directories(root + "/b");
  for (const char* f : {"a/1.jpg", "a/2.jpg", "a/sub/3.png", "b/4.jpg", "b/5.jpg"})
    touch(root + "/" + f);
  ageFolders(root);
  ASSERT_TRUE(openAndCompare(root, indexOn()).saved);
  ASSERT_TRUE(openAndCompare(root, indexOn()).usedIndex);
  const std::vector<std::pair<std::string, std::function<void()>>> changes = {
      {"add a file", [&] { touch(root + "/a/0.jpg"); }},
      {"remove a file", [&] { fs::remove(root + "/b/5.jpg"); }},
      {"rename a file", [&] { fs::rename(root + "/a/2.jpg", root + "/a/9.jpg"); }},
      {"add a file in a sub-folder", [&] { touch(root + "/a/sub/2.jpeg"); }},
      {"add a sub-folder",
       [&] {
         fs::create_directories(root + "/b/deep");
         touch(root + "/b/deep/6.jpg");
       }},
      {"add a class folder",
       [&] {
         fs::create_directories(root + "/c");
         touch(root + "/c/7.jpg");
       }},
      {"rename a class folder", [&] { fs::rename(root + "/c", root + "/C"); }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    const size_t before = openImageFolder(root)->size();
    change();
    FileIndexReport stale = openAndCompare(root, indexOn());
    EXPECT_FALSE(stale.usedIndex);
    // A renamed class folder keeps its mtime (its parent, the root, is not stamped).
    if (what != "rename a class folder")
      EXPECT_FALSE(stale.saved) << "a folder modified just now is racy";
    if (what.find("rename") != 0) EXPECT_NE(openImageFolder(root)->size(), before);
    ageFolders(root);
    FileIndexReport rebuilt = openAndCompare(root, indexOn());
    EXPECT_FALSE(rebuilt.usedIndex) << "aging changed the folders' stamps";
    EXPECT_TRUE(rebuilt.saved) << rebuilt.why;
    EXPECT_TRUE(openAndCompare(root, indexOn()).usedIndex);
  }
  EXPECT_EQ(openImageFolder(root)->classes(), (std::vector<std::string>{"C", "a", "b"}));
  fs::remove_all(root);
}

TEST(DataFileIndex, CorruptOrForeignIndexIsIgnored) {
  const std::string root = fixres::testing::makeTempDir("fixres_index_bad_");
  fs::create_directories(root + "/a");
  touch(root + "/a/1.jpg");
  touch(root + "/a/2.jpg");
  ageFolders(root);
  const std::string path = root + "/.fixres-index";
  ASSERT_TRUE(openAndCompare(root, indexOn()).saved);
  const std::string good = readAll(path);
  std::string why;
  ASSERT_TRUE(decodeFolderIndex(good, &why).has_value()) << why;
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x20;  // the checksum catches it
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"garbage", "not an index at all"},
      {"empty", ""},
      {"truncated", good.substr(0, good.size() - 5)},
      {"flipped byte", flipped},
      {"older version", good.substr(0, 8) + std::string(1, '\x02') + good.substr(9)},
      {"newer version", good.substr(0, 8) + std::string(1, '\x04') + good.substr(9)},
      // The version's high 32 bits: the codec registry's listing stamp of other extensions.
      {"other image listing", good.substr(0, 12) + std::string(1, good[12] ^ 1) + good.substr(13)},
  };
  for (const auto& [what, bytes] : bad) {
    SCOPED_TRACE(what);
    EXPECT_FALSE(decodeFolderIndex(bytes, &why).has_value());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    FileIndexReport r = openAndCompare(root, indexOn());
    EXPECT_FALSE(r.usedIndex);
    EXPECT_TRUE(r.saved) << "rewritten: " << r.why;
    EXPECT_EQ(readAll(path), good);
  }
  // An intact index whose files do not exist here (copied from another tree with the same
  // class names): the folder stamps differ, so it is not used.
  const std::string other = fixres::testing::makeTempDir("fixres_index_other_");
  fs::create_directories(other + "/a");
  touch(other + "/a/x.jpg");
  fs::copy_file(path, other + "/.fixres-index");
  FileIndexReport r = openAndCompare(other, indexOn());
  EXPECT_FALSE(r.usedIndex);
  EXPECT_EQ(openImageFolder(other, indexOn())->name(0), other + "/a/x.jpg");
  fs::remove_all(root);
  fs::remove_all(other);
}

// Its own suite: where a read-only folder cannot be made, only this case shows as skipped.
TEST(DataFileIndexReadOnly, TreeThatCannotBeWrittenUsesTheCacheFolder) {
  const std::string root = fixres::testing::makeTempDir("fixres_index_ro_");
  const std::string cache = fixres::testing::makeTempDir("fixres_index_cache_");
  fs::create_directories(root + "/a");
  fs::create_directories(root + "/b");
  touch(root + "/a/1.jpg");
  touch(root + "/b/2.png");
  ageFolders(root);
  // Read-only for other users; root writes anywhere, so the folder is made immutable instead.
  const bool asRoot = ::geteuid() == 0;
  if (asRoot) {
    if (fixres::testing::runCommand("chattr +i '" + root + "' 2>/dev/null") != 0) {
      fs::remove_all(root);
      FIXRES_SKIP_UNLESS(false, "read-only-folder",
                         "running as root without chattr +i: cannot make a read-only folder");
    }
  } else {
    fs::permissions(root, fs::perms::owner_write, fs::perm_options::remove);
  }
  FileIndexReport none = openAndCompare(root, indexOn());
  EXPECT_FALSE(none.saved);
  EXPECT_NE(none.why.find("cannot write an index"), std::string::npos) << none.why;
  FileIndexReport built = openAndCompare(root, indexOn(cache + "/index"));
  EXPECT_TRUE(built.saved) << built.why;
  EXPECT_EQ(built.path, indexPathInCache(root, cache + "/index"));
  EXPECT_EQ(fs::path(built.path).parent_path(), fs::path(cache + "/index"));
  FileIndexReport read = openAndCompare(root, indexOn(cache + "/index"));
  EXPECT_TRUE(read.usedIndex) << read.why;
  EXPECT_EQ(read.path, built.path);
  // The cache entry of one root is not used for another (same classes, same file names).
  const std::string twin = fixres::testing::makeTempDir("fixres_index_twin_");
  fs::copy(root + "/a", twin + "/a");
  fs::copy(root + "/b", twin + "/b");
  ageFolders(twin);
  const std::string twinEntry = indexPathInCache(twin, cache + "/index");
  fs::copy_file(built.path, twinEntry);
  std::string why;
  auto copied = decodeFolderIndex(readAll(twinEntry), &why);
  ASSERT_TRUE(copied.has_value()) << why;
  FileIndexOptions cacheOnly = indexOn(cache + "/index");
  FileIndexReport foreign;
  auto listed = loadFolderIndex(twin, copied->classes, cacheOnly, foreign);
  EXPECT_FALSE(listed.has_value());
  EXPECT_NE(foreign.why.find("made for " + copied->absoluteRoot), std::string::npos) << foreign.why;
  if (asRoot)
    fixres::testing::runCommand("chattr -i '" + root + "'");
  else
    fs::permissions(root, fs::perms::owner_write, fs::perm_options::add);
  fs::remove_all(root);
  fs::remove_all(twin);
  fs::remove_all(cache);
}

// The warnings on files left out are those of a plain scan, word for word.
TEST(DataFileIndex, WarningsOnLeftOutFilesAreReplayed) {
  const std::string root = fixres::testing::makeTempDir("fixres_index_warn_");
  fs::create_directories(root + "/a");
  fs::create_directories(root + "/b");
  for (const char* f : {"a/1.jpg", "a/2.bmp", "a/3.webp", "b/4.png"}) touch(root + "/" + f);
  ASSERT_EQ(::mkfifo((root + "/b/fifo.jpg").c_str(), 0600), 0);
  fs::create_symlink(root + "/missing.png", root + "/a/broken.png");
  ageFolders(root);
  ::testing::internal::CaptureStderr();
  openImageFolder(root);
  const std::string plain = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  FileIndexReport built;
  openImageFolder(root, indexOn(), &built);
  const std::string scanned = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  FileIndexReport read;
  openImageFolder(root, indexOn(), &read);
  const std::string replayed = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(read.usedIndex) << read.why;
  EXPECT_NE(plain.find("left out 2 file(s) that are not regular"), std::string::npos) << plain;
  EXPECT_EQ(scanned, plain);
  EXPECT_EQ(replayed, plain);
  fs::remove_all(root);
}

TEST(DataFileIndex, EncodeDecodeRoundTrip) {
  FolderIndex in;
  in.absoluteRoot = "/data/train";
  in.classes = {"a", "b"};
  in.folders = {{"a", 11, 1700000000123456789, 1700000000987654321}, {"b/x", 12, -5, 7}};
  in.files = {{"a/1.jpg", 0, 1234, 42}, {"b/x/2.png", 1, 0, -1}};
  in.undecoded = {2, "a/3.bmp"};
  in.notRegular = {0, ""};
  std::string why;
  auto out = decodeFolderIndex(encodeFolderIndex(in), &why);
  ASSERT_TRUE(out.has_value()) << why;
  EXPECT_EQ(out->absoluteRoot, in.absoluteRoot);
  EXPECT_EQ(out->classes, in.classes);
  EXPECT_EQ(out->folders, in.folders);
  ASSERT_EQ(out->files.size(), 2u);
  EXPECT_EQ(out->files[1].path, "b/x/2.png");
  EXPECT_EQ(out->files[1].label, 1);
  EXPECT_EQ(out->files[0].size, 1234u);
  EXPECT_EQ(out->files[1].mtimeNs, -1);
  EXPECT_EQ(out->undecoded.count, 2);
  EXPECT_EQ(out->undecoded.example, "a/3.bmp");
  // A label outside the class list is refused even with a valid checksum.
  in.files[1].label = 2;
  EXPECT_FALSE(decodeFolderIndex(encodeFolderIndex(in), &why).has_value());
  EXPECT_EQ(why, "malformed contents");
}

}  // namespace
}  // namespace fixres::data
