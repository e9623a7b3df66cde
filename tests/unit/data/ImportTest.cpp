// `fixres import` writes only what it makes: it creates a new folder, fills an empty one or
// replaces the entries of one an earlier import made (its marker file), and refuses anything
// else at --out, deleting nothing it did not write, leaving no temporary folder behind.
#include "fixres/data/Import.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../Reference.h"
#include "IdxFiles.h"
#include "fixres/common/Error.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

class DataImport : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fixres::testing::makeTempDir("fixres_import_");
    source_ = root_ + "/idx";
    fs::create_directories(source_);
    fixres::testing::writeIdxSource(source_, 12, 6, 3);
  }
  ImportOptions options(const std::string& out, int64_t holdout = 2) const {
    ImportOptions o;
    o.sourceDir = source_;
    o.outDir = out;
    o.holdout = holdout;
    return o;
  }
  // Entries of `dir` named like import's temporary folders.
  static int temporaries(const std::string& dir) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir))
      n += e.path().filename().string().rfind(".fixres-import-", 0) == 0;
    return n;
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  std::string root_, source_;
};

// Refused with a usage error naming --out's value, before anything is written.
void expectRefused(const ImportOptions& o, const std::string& why) {
  try {
    importIdx(o);
    ADD_FAILURE() << why << ": " << o.outDir << " accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(o.outDir), std::string::npos) << e.what();
  }
}

TEST_F(DataImport, RefusesWhatItDidNotMakeAndLeavesItAlone) {
  const std::string file = root_ + "/file";
  write(file, "precious");
  expectRefused(options(file), "a regular file");
  EXPECT_EQ(fixres::testing::readText(file), "precious");

  const std::string data = root_ + "/dataset";
  fs::create_directories(data + "/train/cat");
  write(data + "/train/cat/1.jpg", "mine");
  expectRefused(options(data), "a folder without the marker");
  expectRefused(options(data + "/"), "the same with a trailing slash");
  EXPECT_EQ(fixres::testing::readText(data + "/train/cat/1.jpg"), "mine");

  fs::create_symlink(root_ + "/nowhere", root_ + "/dangling");
  expectRefused(options(root_ + "/dangling"), "a link to nothing");
  EXPECT_FALSE(fs::exists(root_ + "/nowhere"));

  // An import that did not refuse the above would empty what comes next. "/" is never tried
  // here: tests run as root, and a regression would wipe the machine.
  if (HasFailure()) GTEST_FAIL() << "not trying '.' and '..'";
  // The current folder and its parent are not empty.
  const fs::path cwd = fs::current_path();
  fs::current_path(data);
  expectRefused(options("."), "the current folder");
  expectRefused(options(".."), "its parent");
  fs::current_path(cwd);
  EXPECT_EQ(fixres::testing::readText(data + "/train/cat/1.jpg"), "mine");
  EXPECT_EQ(temporaries(root_), 0);
}

TEST_F(DataImport, NewFolderAndPartialSiblingUntouched) {
  const std::string out = root_ + "/a/b/fmnist";
  fs::create_directories(root_ + "/a/b");
  write(out + ".partial", "a user's file");
  const ImportReport r = importIdx(options(out));
  EXPECT_FALSE(r.alreadyThere);
  EXPECT_EQ(r.train, 10);
  EXPECT_EQ(r.holdout, 2);
  EXPECT_EQ(r.val, 6);
  EXPECT_TRUE(fs::exists(out + "/train/0/000000.png"));
  EXPECT_TRUE(fs::exists(out + "/holdout/1/000010.png"));
  EXPECT_TRUE(fs::exists(out + "/val/2/000005.png"));
  EXPECT_EQ(fixres::testing::readText(out + ".partial"), "a user's file");
  EXPECT_EQ(temporaries(root_ + "/a/b"), 0);
  EXPECT_TRUE(importIdx(options(out)).alreadyThere);
}

TEST_F(DataImport, EmptyFolderIsFilledInPlace) {
  const std::string out = root_ + "/empty";
  fs::create_directories(out);
  struct stat before {};
  ASSERT_EQ(::stat(out.c_str(), &before), 0);
  importIdx(options(out));
  struct stat after {};
  ASSERT_EQ(::stat(out.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // the user's folder itself is kept
  EXPECT_TRUE(fs::exists(out + "/.fixres-import"));
  EXPECT_TRUE(fs::exists(out + "/val/0/000000.png"));
  // The empty current folder, named ".".
  const std::string here = root_ + "/here";
  fs::create_directories(here);
  const fs::path cwd = fs::current_path();
  fs::current_path(here);
  EXPECT_NO_THROW(importIdx(options(".")));
  fs::current_path(cwd);
  EXPECT_TRUE(fs::exists(here + "/train/2/000002.png"));
  EXPECT_EQ(temporaries(root_), 0);
}

TEST_F(DataImport, EarlierImportWithOtherSizesIsReplacedKeepingOtherFiles) {
  const std::string out = root_ + "/fmnist";
  importIdx(options(out, 2));
  write(out + "/NOTES", "kept");
  const ImportReport r = importIdx(options(out, 4));
  EXPECT_FALSE(r.alreadyThere);
  EXPECT_EQ(fixres::testing::readText(out + "/.fixres-import"),
            "fixres import\ntrain 8\nholdout 4\nval 6\n");
  EXPECT_FALSE(fs::exists(out + "/train/0/000009.png"));  // now held out
  EXPECT_TRUE(fs::exists(out + "/holdout/2/000008.png"));
  EXPECT_EQ(fixres::testing::readText(out + "/NOTES"), "kept");
  EXPECT_EQ(temporaries(root_), 0);
  // Through a symlink to it, the same import is found.
  fs::create_symlink(out, root_ + "/link");
  EXPECT_TRUE(importIdx(options(root_ + "/link", 4)).alreadyThere);
  // Not while the current folder is inside an entry it would remove.
  const fs::path cwd = fs::current_path();
  fs::current_path(out + "/train/1");
  expectRefused(options(out, 3), "the current folder inside train/");
  fs::current_path(cwd);
  EXPECT_TRUE(fs::exists(out + "/train/1"));
}

TEST_F(DataImport, FailureRemovesItsTemporaryFolderOnly) {
  const std::string out = root_ + "/fmnist";
  ImportOptions o = options(out);
  // Class "0"'s images go to 0/000000.png..., which class "0/000000.png" made a folder: the
  // first PNG cannot be written.
  o.classNames = {"0", "0/000000.png", "2"};
  EXPECT_THROW(importIdx(o), OutputError);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(temporaries(root_), 0);
  if (::geteuid() != 0) {  // root writes into read-only folders
    const std::string ro = root_ + "/readonly";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(importIdx(options(ro + "/fmnist")), DataError);
    fs::permissions(ro, fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(ro));
  }
}

}  // namespace
}  // namespace fixres::data
