// Resolution once (engine/ModelResolution.h): a size list is refused outside the one range of
// image sizes (kImageSizes, the flags' range), and a model's test preprocessing record (sizes,
// crop, resize rule, filter, mean, std) and class names come from the flags when given, else from
// its model folder (a timm hub folder written by exportModel, as `fixres export --format
// timm-hub` writes it), else from the command's and FixRes's defaults; the record then reaches
// the transform, the card and the ONNX metadata unchanged.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/OnnxExport.h"

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
  // The folder records a whole test preprocessing record, none of it the defaults.
  Preprocessing recorded;
  recorded.sizes = {40};
  recorded.cropPct = 0.95;
  recorded.resizeMode = image::ResizeMode::kShorter;
  recorded.filter = image::Filter::kBicubic;
  recorded.mean = {0.5f, 0.25f, 0.125f};
  recorded.std = {0.5f, 0.5f, 0.25f};
  CardOverrides folder;
  const std::string names = dir + "-names.txt";
  std::ofstream(names) << "cat\ndog\nfox\n";
  folder.classNamesFile = names;
  exportModel(*model, ExportLayout::kTimmHub, exportCard(spec, recorded, folder), dir);

  ModelRequest request;
  request.spec.architecture = "resnet_tiny";
  request.spec.weightPath = dir;
  // What the CLI does with a model folder before resolving: its filter, mean and std apply.
  applyModelCard(readModelFolder(dir), request.spec);
  ResolvedModel m = resolveModel(request, {224});
  ASSERT_TRUE(m.card.has_value());
  EXPECT_EQ(m.sizes(), std::vector<int>{40});
  EXPECT_EQ(m.spec.runSize, 40);
  EXPECT_EQ(m.input.resizeMode, image::ResizeMode::kShorter);
  EXPECT_DOUBLE_EQ(m.input.cropPct, 0.95);
  EXPECT_EQ(m.input.filter, image::Filter::kBicubic);
  EXPECT_EQ(m.input.mean, recorded.mean);
  EXPECT_EQ(m.input.std, recorded.std);
  EXPECT_EQ(m.classNames, (std::vector<std::string>{"cat", "dog", "fox"}));
  EXPECT_EQ(m.classCount(), 3);  // the weight file's classifier

  request.sizes = {32, 48};
  request.resizeMode = image::ResizeMode::kFixres;
  request.cropPct = 0.8;
  std::ofstream(names) << "a\nb\nc\n";
  request.classNamesFile = names;
  m = resolveModel(request, {224});
  EXPECT_EQ(m.sizes(), (std::vector<int>{32, 48}));
  EXPECT_TRUE(m.spec.dynamicImgSize);  // several sizes: one model for all
  EXPECT_TRUE(m.input.dynamicSize);
  EXPECT_EQ(m.input.resizeMode, image::ResizeMode::kFixres);
  EXPECT_DOUBLE_EQ(m.input.cropPct, 0.8);
  EXPECT_EQ(m.classNames, (std::vector<std::string>{"a", "b", "c"}));

  ModelRequest plain;  // a weight file, or none: the command's default, else the architecture's
  plain.spec.architecture = "resnet50";
  m = resolveModel(plain, {224});
  EXPECT_EQ(m.sizes(), std::vector<int>{224});
  EXPECT_FALSE(m.card.has_value());
  EXPECT_EQ(m.input.resizeMode, image::ResizeMode::kFixres);  // FixRes's rule and crop
  EXPECT_DOUBLE_EQ(m.input.cropPct, kFixresCropPct);
  m = resolveModel(plain, {});
  EXPECT_EQ(m.sizes(), std::vector<int>{models::architectureInfo("resnet50").testSize});
  EXPECT_EQ(m.classCount(), 0);
}

// The record reaches each consumer unchanged: the val transform (resize side floor(S / crop),
// timm's scale_size), the evaluation options, and a card made from it, whose test() and ONNX
// metadata give the same values back.
TEST(ModelResolution, TheRecordReachesTransformCardAndMetadataUnchanged) {
  Preprocessing p;
  p.sizes = {96};
  p.cropPct = 0.9;
  p.resizeMode = image::ResizeMode::kShorter;
  p.filter = image::Filter::kBicubic;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.25f, 0.5f, 0.75f};
  const image::TransformOptions t = p.valTransform(96);
  EXPECT_EQ(t.kind, image::TransformKind::kVal);
  EXPECT_EQ(t.inputSize, 96);
  EXPECT_DOUBLE_EQ(t.cropPct, 0.9);
  EXPECT_EQ(t.resizeMode, image::ResizeMode::kShorter);
  EXPECT_EQ(t.filter, image::Filter::kBicubic);
  EXPECT_EQ(t.mean, p.mean);
  EXPECT_EQ(t.std, p.std);
  EXPECT_EQ(image::valResizeSize(96, t.cropPct), 106);  // floor(96 / 0.9) = floor(106.67)
  const EvalOptions e = evalOptions(EvalSettings{}, 96, p, RunDevice{});
  EXPECT_DOUBLE_EQ(e.transform.cropPct, 0.9);
  EXPECT_EQ(e.transform.resizeMode, image::ResizeMode::kShorter);

  ModelSpec spec;
  spec.architecture = "resnet_tiny";
  spec.numClasses = 3;
  const ModelCard card = exportCard(spec, p);
  const Preprocessing back = card.test();
  EXPECT_EQ(back.sizes, p.sizes);
  EXPECT_DOUBLE_EQ(back.cropPct, p.cropPct);
  EXPECT_EQ(back.resizeMode, p.resizeMode);
  EXPECT_EQ(back.filter, p.filter);
  EXPECT_EQ(back.mean, p.mean);
  EXPECT_EQ(back.std, p.std);
  const auto metadata = onnxMetadata(card, /*dynamicSize=*/true);
  ASSERT_FALSE(metadata.empty());
  ASSERT_EQ(metadata[0].first, "fixres.preprocessing");
  const auto j = nlohmann::json::parse(metadata[0].second);
  EXPECT_EQ(j["input_size"], 96);
  EXPECT_EQ(j["dynamic_size"], true);
  EXPECT_DOUBLE_EQ(j["crop_pct"].get<double>(), 0.9);
  EXPECT_EQ(j["resize_mode"], "shorter");
  EXPECT_EQ(j["resize_rule"], "shorter side := int(S / crop_pct)");
  EXPECT_EQ(j["interpolation"], "bicubic");
  EXPECT_EQ(j["mean"], nlohmann::json::array({0.5, 0.5, 0.5}));
  EXPECT_EQ(j["std"], nlohmann::json::array({0.25, 0.5, 0.75}));
}

// What a command was given is what it set: a model folder completes only the fields left unset
// (architecture, filter), empty (mean, std) or 0 (classifier size), whatever gave the others (a
// flag or --config); and the defaults apply to what neither gave.
TEST(ModelResolution, AFolderCompletesOnlyWhatWasLeftUnset) {
  const std::string dir = fixres::testing::makeTempDir("fixres_completion_") + "/hub";
  ModelSpec recordedSpec;
  recordedSpec.architecture = "resnet_tiny";
  recordedSpec.numClasses = 3;
  Preprocessing recorded;
  recorded.sizes = {40};
  recorded.filter = image::Filter::kBicubic;
  recorded.mean = {0.5f, 0.25f, 0.125f};
  recorded.std = {0.5f, 0.5f, 0.25f};
  auto model = models::createModel("resnet_tiny", 3);
  exportModel(*model, ExportLayout::kTimmHub, exportCard(recordedSpec, recorded), dir);
  const ModelCard card = readModelFolder(dir);

  ModelSpec unset;  // nothing given: the folder's values
  unset.weightPath = dir;
  applyModelCard(card, unset);
  EXPECT_EQ(unset.architecture, std::optional<std::string>("resnet_tiny"));
  EXPECT_EQ(unset.interpolation, std::optional<image::Filter>(image::Filter::kBicubic));
  EXPECT_EQ(unset.mean, std::vector<float>(recorded.mean.begin(), recorded.mean.end()));
  EXPECT_EQ(unset.std, std::vector<float>(recorded.std.begin(), recorded.std.end()));

  ModelSpec given;  // each given, none the folder's: each kept
  given.weightPath = dir;
  given.architecture = "resnet18";
  given.numClasses = 7;
  given.interpolation = image::Filter::kBilinear;
  given.mean = {0.1f, 0.2f, 0.3f};
  given.std = {0.4f, 0.5f, 0.6f};
  const ModelSpec before = given;
  applyModelCard(card, given);
  EXPECT_EQ(given.architecture, before.architecture);
  EXPECT_EQ(given.numClasses, 7);
  EXPECT_EQ(given.interpolation, before.interpolation);
  EXPECT_EQ(given.mean, before.mean);
  EXPECT_EQ(given.std, before.std);

  const ModelSpec bare = ModelSpec{}.withDefaults();  // no folder either: the defaults
  EXPECT_EQ(bare.architecture, std::optional<std::string>(kDefaultArchitecture));
  EXPECT_EQ(bare.interpolation, std::optional<image::Filter>(image::Filter::kBilinear));
  EXPECT_EQ(bare.architectureName(), "ResNet50");
}

// A sweep folder's recorded runtime and precision apply where --runtime and --precision were not
// given; a given one wins; the defaults (LibTorch, auto) apply where neither says.
TEST(ModelResolution, RecordedNumericsApplyWhereNotGiven) {
  ResolvedModel m;
  EXPECT_EQ(m.numerics(NumericsRequest{}, true).precision, PrecisionChoice::kAuto);
  EXPECT_EQ(m.numerics(NumericsRequest{}, true).runtime, RuntimeChoice::kLibTorch);
  m.card = ModelCard{};
  m.card->folder = "sweep-folder";
  m.card->precision = PrecisionChoice::kBf16;
  m.card->runtime = RuntimeChoice::kLibTorch;
  EXPECT_EQ(m.numerics(NumericsRequest{}, true).precision, PrecisionChoice::kBf16);
  NumericsRequest given;
  given.precision = PrecisionChoice::kFp32;
  EXPECT_EQ(m.numerics(given, true).precision, PrecisionChoice::kFp32);
  // OpenVINO recorded, the model on CUDA: LibTorch runs it, unless --runtime says otherwise.
  m.card->runtime = RuntimeChoice::kOpenVino;
  EXPECT_EQ(m.numerics(NumericsRequest{}, /*onCpu=*/false).runtime, RuntimeChoice::kLibTorch);
  given.runtime = RuntimeChoice::kAuto;
  EXPECT_EQ(m.numerics(given, /*onCpu=*/false).runtime, RuntimeChoice::kAuto);
}

}  // namespace
}  // namespace fixres::engine
