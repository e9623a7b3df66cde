// The dataset readers and their factory, against torchvision's ImageFolder
// (tests/reference/image_folder.py): which reader takes a root, the classes each declares without
// reading a sample (torchvision's find_classes: every sub-folder; a shard index's classes, which
// are the source folder's), the sampler a reader requires, and roots no reader takes.
#include "fixres/data/DatasetReader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/ShardWriter.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

// image_folder.py's tree, and what torchvision's ImageFolder lists for it.
struct ReaderTree {
  std::string root;
  nlohmann::json listing;
};

ReaderTree readerTree() {
  ReaderTree t;
  t.root = fixres::testing::makeTempDir("fixres_readers_");
  t.listing = nlohmann::json::parse(fixres::testing::runReference("image_folder.py", t.root));
  return t;
}

// The error message of `f`, "" when it throws no DataError.
template <typename F>
std::string readerError(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(DataDatasetReader, EachRootGoesToItsReader) {
  const ReaderTree t = readerTree();
  const auto classes = t.listing["classes"].get<std::vector<std::string>>();
  FileIndexOptions indexOn;
  indexOn.enabled = true;
  indexOn.racySeconds = 0;
  EXPECT_EQ(readerFor(t.root).name(), "image folder");
  EXPECT_EQ(readerFor(t.root, indexOn).name(), "indexed image folder");
  for (const auto& index : {FileIndexOptions{}, indexOn}) {
    auto ds = openDataset(t.root, index);
    EXPECT_EQ(ds->classes(), classes);
    ASSERT_EQ(ds->size(), t.listing["samples"].size());
    for (size_t i = 0; i < ds->size(); ++i) {
      EXPECT_EQ(ds->name(i), t.listing["samples"][i][0].get<std::string>()) << i;
      EXPECT_EQ(ds->label(i), t.listing["samples"][i][1].get<int64_t>()) << i;
    }
  }

  // The same samples as shards: the shard reader, which requires the shard sampler.
  ShardWriteOptions o;
  o.outDir = fixres::testing::makeTempDir("fixres_readers_shards_") + "/s";
  o.shardBytes = 4000;
  writeShards(*openImageFolder(t.root), o);
  const DatasetReader& shards = readerFor(o.outDir, indexOn);
  EXPECT_EQ(shards.name(), "shard folder");
  EXPECT_TRUE(shards.requiredSampler() == SamplerKind::kShard);
  EXPECT_EQ(openDataset(o.outDir)->size(), t.listing["samples"].size());
  EXPECT_EQ(openDataset(o.outDir)->classes(), classes);
  EXPECT_FALSE(readerFor(t.root).requiredSampler().has_value());
  EXPECT_FALSE(readerFor(t.root, indexOn).requiredSampler().has_value());
  EXPECT_EQ(choiceName(samplerKinds(), SamplerKind::kShard), "shard");

  // Unlabelled: one class "", every image (image_folder.py puts one empty .jpg at the root: a
  // file the unlabelled walk takes, outside the class folders).
  auto unlabelled = openUnlabelledImages(o.outDir);
  EXPECT_EQ(unlabelled->classes(), std::vector<std::string>{""});
  EXPECT_EQ(unlabelled->size(), t.listing["samples"].size());
  auto images = openUnlabelledImages(t.root);
  EXPECT_EQ(images->classes(), std::vector<std::string>{""});
  EXPECT_EQ(images->size(), t.listing["samples"].size() + 1);
  for (size_t i = 0; i < images->size(); ++i) EXPECT_EQ(images->label(i), 0);
}

TEST(DataDatasetReader, DeclaredClassesNeedNoSample) {
  const ReaderTree t = readerTree();
  const auto classes = t.listing["classes"].get<std::vector<std::string>>();
  EXPECT_EQ(declaredClasses(t.root), classes);
  // find_classes lists every sub-folder, images or not (ImageFolder itself would then refuse the
  // empty class; the declaration is only the folders).
  fs::create_directories(t.root + "/d_empty");
  auto withEmpty = classes;
  withEmpty.push_back("d_empty");
  EXPECT_EQ(declaredClasses(t.root), withEmpty);
  fs::remove(t.root + "/d_empty");

  // Shards declare the classes of their index (the source folder's); without an index, none.
  ShardWriteOptions o;
  o.outDir = fixres::testing::makeTempDir("fixres_readers_declared_") + "/s";
  writeShards(*openImageFolder(t.root), o);
  EXPECT_EQ(declaredClasses(o.outDir), classes);
  fs::remove(o.outDir + "/" + kShardIndexName);
  EXPECT_TRUE(declaredClasses(o.outDir).empty());

  // A flat folder of images declares none.
  const std::string flat = fixres::testing::makeTempDir("fixres_readers_flat_");
  fs::copy_file(t.listing["samples"][0][0].get<std::string>(), flat + "/one.jpg");
  EXPECT_TRUE(declaredClasses(flat).empty());
  EXPECT_EQ(openUnlabelledImages(flat)->size(), 1u);
}

TEST(DataDatasetReader, RootsNoReaderTakesAreDataErrorsNamingThem) {
  const std::string dir = fixres::testing::makeTempDir("fixres_readers_none_");
  const std::string missing = dir + "/missing";
  EXPECT_NE(readerError([&] { readerFor(missing); }).find(missing + " does not exist"),
            std::string::npos);
  EXPECT_NE(readerError([&] { openDataset(missing); }).find(missing), std::string::npos);
  EXPECT_NE(readerError([&] { declaredClasses(missing); }).find(missing), std::string::npos);
  const std::string file = dir + "/notes.txt";
  std::ofstream(file) << "not a dataset";
  const std::string e = readerError([&] { openUnlabelledImages(file); });
  EXPECT_NE(e.find(file + ": no reader takes it"), std::string::npos) << e;
  for (const DatasetReader* r : datasetReaders())
    EXPECT_NE(e.find(r->name()), std::string::npos) << e;
}

}  // namespace
}  // namespace fixres::data
