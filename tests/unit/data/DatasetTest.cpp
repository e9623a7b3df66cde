// Image folder listing against torchvision's ImageFolder (tests/reference/image_folder.py), IDX
// reading (plain and gzipped, and the Fashion-MNIST files when installed), class list checks.
#include "fixres/data/Dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "IdxFiles.h"
#include "fixres/common/Error.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

TEST(DataDataset, ImageFolderListsLikeTorchvision) {
  const std::string root = fixres::testing::makeTempDir("fixres_folder_");
  const auto ref = nlohmann::json::parse(fixres::testing::runReference("image_folder.py", root));
  auto ds = openImageFolder(root);
  EXPECT_EQ(ds->classes(), ref["classes"].get<std::vector<std::string>>());
  ASSERT_EQ(ds->size(), ref["samples"].size());
  for (size_t i = 0; i < ds->size(); ++i) {
    EXPECT_EQ(ds->name(i), ref["samples"][i][0].get<std::string>()) << i;
    EXPECT_EQ(ds->label(i), ref["samples"][i][1].get<int64_t>()) << i;
  }
  const RawSample s = ds->fetch(0);
  EXPECT_FALSE(s.isDecoded);
  EXPECT_GT(s.size(), 100u);
  auto cached = cacheInMemory(ds);
  EXPECT_EQ(*cached->fetch(3).bytes, *ds->fetch(3).bytes);
  EXPECT_EQ(cached->classes(), ds->classes());
  fs::remove_all(root);
}

TEST(DataDataset, BadFoldersAreDataErrors) {
  const std::string root = fixres::testing::makeTempDir("fixres_badfolder_");
  EXPECT_THROW(openImageFolder(root + "/missing"), DataError);
  EXPECT_THROW(openImageFolder(root), DataError);  // no class folder
  fs::create_directories(root + "/cls");
  std::ofstream(root + "/cls/readme.txt") << "x";
  try {
    openImageFolder(root);
    ADD_FAILURE() << "empty class accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cls"), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

using fixres::testing::writeIdx;

// How many lines of `text` contain `part`.
int linesWith(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
  return n;
}

// Reading a FIFO blocks until a writer comes, a device may never end: only regular files (and
// symlinks to them, followed as before, like symlinked folders) are listed; one warning counts
// the others and names one.
TEST(DataDataset, NonRegularFilesAreLeftOutWithOneWarning) {
  const std::string root = fixres::testing::makeTempDir("fixres_special_");
  const std::string outside = fixres::testing::makeTempDir("fixres_outside_");
  fs::create_directories(root + "/a");
  fs::create_directories(outside + "/b");
  std::ofstream(root + "/a/1.jpg") << "x";
  std::ofstream(outside + "/target.png") << "x";
  std::ofstream(outside + "/b/2.jpg") << "x";
  ASSERT_EQ(::mkfifo((root + "/a/fifo.jpg").c_str(), 0600), 0);
  fs::create_symlink(outside + "/missing.jpg", root + "/a/broken.jpg");
  fs::create_symlink("/dev/zero", root + "/a/zero.JPEG");
  fs::create_symlink(outside + "/target.png", root + "/a/linked.png");
  fs::create_directory_symlink(outside + "/b", root + "/b");
  ::testing::internal::CaptureStderr();
  auto ds = openImageFolder(root);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(ds->name(0), root + "/a/1.jpg");
  EXPECT_EQ(ds->name(1), root + "/a/linked.png");
  EXPECT_EQ(ds->name(2), root + "/b/2.jpg");
  EXPECT_EQ(linesWith(err, "warning: "), 1) << err;
  EXPECT_EQ(linesWith(err, "left out 3 file(s) that are not regular files"), 1) << err;
  EXPECT_EQ(linesWith(err, "e.g. " + root + "/a/broken.jpg"), 1) << err;
  // A class holding nothing else is empty.
  fs::remove(root + "/a/1.jpg");
  fs::remove(root + "/a/linked.png");
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(openImageFolder(root), DataError);
  ::testing::internal::GetCapturedStderr();
  fs::remove_all(root);
  fs::remove_all(outside);
}

// Every extension torchvision lists (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case)
// is listed, in sorted path order, without a warning.
TEST(DataDataset, EveryImageFolderExtensionIsListed) {
  const std::string root = fixres::testing::makeTempDir("fixres_formats_");
  fs::create_directories(root + "/a");
  fs::create_directories(root + "/b");
  for (const char* f : {"a/1.jpg", "a/2.JPEG", "a/3.Png", "a/4.bmp", "a/5.WEBP", "a/6.tif",
                        "a/7.tiff", "a/8.ppm", "a/9.pgm", "a/notes.txt", "b/only.bmp"}) {
    std::ofstream(root + "/" + f) << "x";
  }
  ::testing::internal::CaptureStderr();
  auto ds = openImageFolder(root);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(ds->size(), 10u);
  EXPECT_EQ(ds->name(3), root + "/a/4.bmp");
  EXPECT_EQ(ds->name(8), root + "/a/9.pgm");
  EXPECT_EQ(ds->name(9), root + "/b/only.bmp");
  EXPECT_EQ(ds->label(9), 1);
  EXPECT_EQ(linesWith(err, "warning: "), 0) << err;
  fs::remove_all(root);
}

TEST(DataDataset, IdxPlainAndGzipped) {
  const std::string dir = fixres::testing::makeTempDir("fixres_idx_");
  std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 12; ++i) images.push_back(static_cast<uint8_t>(i * 20));
  std::vector<uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, 3, 4, 0, 2};
  for (bool gz : {false, true}) {
    const std::string ip = dir + (gz ? "/i.gz" : "/i"), lp = dir + (gz ? "/l.gz" : "/l");
    writeIdx(ip, images, gz);
    writeIdx(lp, labels, gz);
    auto ds = openIdx(ip, lp);
    ASSERT_EQ(ds->size(), 3u);
    EXPECT_EQ(ds->classes().size(), 5u);
    EXPECT_EQ(ds->label(0), 4);
    EXPECT_EQ(ds->label(2), 2);
    const RawSample s = ds->fetch(1);
    ASSERT_TRUE(s.isDecoded);
    ASSERT_EQ(s.decoded.width, 2);
    ASSERT_EQ(s.decoded.height, 2);
    EXPECT_EQ(s.decoded.pixels[0], 80);  // image 1, pixel 0, replicated to RGB
    EXPECT_EQ(s.decoded.pixels[2], 80);
    EXPECT_EQ(s.decoded.pixels[11], 140);
  }
  // Truncated pixels and mismatched counts.
  std::vector<uint8_t> shortImages(images.begin(), images.end() - 1);
  writeIdx(dir + "/bad", shortImages, false);
  EXPECT_THROW(openIdx(dir + "/bad", dir + "/l"), DataError);
  EXPECT_THROW(openIdx(dir + "/l", dir + "/i"), DataError);  // swapped: wrong magic
  EXPECT_THROW(openIdx(dir + "/missing", dir + "/l"), DataError);
  fs::remove_all(dir);
}

TEST(DataDataset, FashionMnistFilesWhenInstalled) {
  const std::string d = "/usr/share/datasets/fashion-mnist";
  FIXRES_SKIP_UNLESS(fs::exists(d + "/t10k-images-idx3-ubyte.gz"), "fashion-mnist",
                     "no Fashion-MNIST at " << d);
  auto test = openIdx(d + "/t10k-images-idx3-ubyte.gz", d + "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(test->size(), 10000u);
  EXPECT_EQ(test->classes().size(), 10u);
  // The first test labels of Fashion-MNIST: ankle boot, pullover, trouser, trouser, shirt.
  EXPECT_EQ(test->label(0), 9);
  EXPECT_EQ(test->label(1), 2);
  EXPECT_EQ(test->label(2), 1);
  EXPECT_EQ(test->label(4), 6);
  EXPECT_EQ(test->fetch(0).decoded.width, 28);
}

TEST(DataDataset, ClassListsMustAgree) {
  const std::string root = fixres::testing::makeTempDir("fixres_classes_");
  for (const char* p : {"train/a", "train/b", "val/a", "val/c"})
    fs::create_directories(root + "/" + p);
  for (const char* p : {"train/a/1.jpg", "train/b/1.jpg", "val/a/1.jpg", "val/c/1.jpg"}) {
    std::ofstream(root + "/" + p) << "x";
  }
  auto train = openImageFolder(root + "/train");
  auto val = openImageFolder(root + "/val");
  EXPECT_NO_THROW(checkSameClasses(*train, *train));
  try {
    checkSameClasses(*train, *val);
    ADD_FAILURE() << "different classes accepted";
  } catch (const DataError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(root + "/train"), std::string::npos) << m;
    EXPECT_NE(m.find(root + "/val"), std::string::npos) << m;
    EXPECT_NE(m.find("'b' vs 'c'"), std::string::npos) << m;
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace fixres::data
