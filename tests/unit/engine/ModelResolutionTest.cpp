// Resolution once (engine/ModelResolution.h): a size list is refused outside the one range of
// image sizes (kImageSizes, the flags' range), and a model's sizes, resize rule and class names
// come from the flags when given, else from its model folder (a timm hub folder written by
// exportModel, as `fixres export --format timm-hub` writes it), else from the command's default.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelResolution.h"

namespace fixres::engine {
namespace {

TEST(ModelResolution, SizeListsTakeTheImageSizesRange) {
  EXPECT_EQ(parseSizeList("224", "--input-size"), std::vector<int>{224});
  EXPECT_EQ(parseSizeList("8,4096,320", "--sizes"), (std::vector<int>{8, 4096, 320}));
  for (const char* bad : {"", "7", "4097", "224,", "2x4", "a", "224,,288", "99999999999"}) {
    try {
      parseSizeList(bad, "--input-size");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--input-size"), std::string::npos) << e.what();
    }
  }
  // Spaces around an item are the item's (both sides alike; " 224" was taken, "224 " refused).
  EXPECT_EQ(parseSizeList(" 224, 288 ", "--sizes"), (std::vector<int>{224, 288}));
  EXPECT_EQ(parseSizeList("224 ,288", "--sizes"), (std::vector<int>{224, 288}));
  EXPECT_THROW(parseSizeList("224, ,288", "--sizes"), UsageError);
  EXPECT_FALSE(kImageSizes.contains(7));
  EXPECT_TRUE(kImageSizes.contains(4096));
}

TEST(ModelResolution, FlagsThenTheModelFolderThenTheDefault) {
  const std::string dir = fixres::testing::makeTempDir("fixres_resolution_") + "/hub";
  ModelSpec spec;
  spec.architecture = "resnet_tiny";
  spec.numClasses = 3;
  auto model = models::createModel("resnet_tiny", 3);
  CardOverrides folder;
  folder.testSize = 40;
  folder.resizeMode = image::ResizeMode::kShorter;
  const std::string names = dir + "-names.txt";
  std::ofstream(names) << "cat\ndog\nfox\n";
  folder.classNamesFile = names;
  exportModel(*model, ExportLayout::kTimmHub, exportCard(spec, folder), dir);

  ModelRequest request;
  request.spec.architecture = "resnet_tiny";
  request.spec.weightPath = dir;
  ResolvedModel m = resolveModel(request, {224}, image::ResizeMode::kFixres);
  ASSERT_TRUE(m.card.has_value());
  EXPECT_EQ(m.sizes, std::vector<int>{40});
  EXPECT_EQ(m.spec.runSize, 40);
  EXPECT_EQ(m.resizeMode, image::ResizeMode::kShorter);
  EXPECT_EQ(m.classNames, (std::vector<std::string>{"cat", "dog", "fox"}));
  EXPECT_EQ(m.classCount(), 3);  // the weight file's classifier

  request.sizes = {32, 48};
  request.resizeMode = image::ResizeMode::kFixres;
  std::ofstream(names) << "a\nb\nc\n";
  request.classNamesFile = names;
  m = resolveModel(request, {224}, image::ResizeMode::kShorter);
  EXPECT_EQ(m.sizes, (std::vector<int>{32, 48}));
  EXPECT_TRUE(m.spec.dynamicImgSize);  // several sizes: one model for all
  EXPECT_EQ(m.resizeMode, image::ResizeMode::kFixres);
  EXPECT_EQ(m.classNames, (std::vector<std::string>{"a", "b", "c"}));

  ModelRequest plain;  // a weight file, or none: the command's default, else the architecture's
  plain.spec.architecture = "resnet50";
  m = resolveModel(plain, {224}, image::ResizeMode::kShorter);
  EXPECT_EQ(m.sizes, std::vector<int>{224});
  EXPECT_FALSE(m.card.has_value());
  EXPECT_EQ(m.resizeMode, image::ResizeMode::kShorter);
  m = resolveModel(plain, {}, image::ResizeMode::kFixres);
  EXPECT_EQ(m.sizes, std::vector<int>{models::architectureInfo("resnet50").testSize});
  EXPECT_EQ(m.classCount(), 0);
}

}  // namespace
}  // namespace fixres::engine
