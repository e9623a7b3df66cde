// EfficientNet, PNASNet and ResNet-D against their references (tests/reference/zoo_reference.py):
// timm's tf_efficientnet_b0/b3, efficientnet_b0, pnasnet5large and resnet26d (from the timm source
// in
// ../shared/oracles, skipped when absent) and torchvision's efficientnet_b2 (loaded from
// torchvision's names). Logits and embeddings in eval mode (NCHW and channels-last, square and
// odd input sizes), logits and running statistics in train mode: relative L2 error < 1e-5. Plus
// the registry's names and the fine-tuning recipes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <filesystem>

#include "../Reference.h"
#include "ParameterCount.h"
#include "Parity.h"
#include "fixres/common/Error.h"
#include "fixres/models/EfficientNet.h"
#include "fixres/models/PNASNet.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"
#include "fixres/step/FinetuneRecipe.h"

namespace fixres::models {
namespace {

using fixres::testing::cachedReference;
using fixres::testing::parameterCount;
using fixres::testing::referenceTensor;
using fixres::testing::relErr;

constexpr double kZooTolerance = 1e-5;

std::string oraclesDir() {
  return std::string(FIXRES_SOURCE_DIR) + "/../shared/oracles";
}
bool haveOracles() {
  return std::filesystem::exists(oraclesDir() + "/timm/__init__.py");
}

const std::string& zooDir() {
  static const std::string dir = [] {
    std::string made;
    cachedReference("zoo_reference.py", "make {dir} " + oraclesDir(), &made);
    return made;
  }();
  return dir;
}

class ZooParity : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooParity, MatchesTheReferenceInEvalAndTrainMode) {
  const std::string arch = GetParam();
  const bool needsTimm = arch != "efficientnet_b2";
  if (needsTimm) FIXRES_SKIP_UNLESS(haveOracles(), "oracles", "no timm source at " << oraclesDir());
  const std::string dir = zooDir();
  ASSERT_TRUE(std::filesystem::exists(dir + "/" + arch + "_expected.pth")) << dir;
  c10::IValue inputs = readTorchFile(dir + "/inputs.pth");
  c10::IValue expected = readTorchFile(dir + "/" + arch + "_expected.pth");
  ModelOptions o;
  o.numClasses = 10;
  o.dropRate = 0;      // the references are built with timm's and torchvision's defaults...
  o.dropPathRate = 0;  // ...which the train-mode comparison needs off (random otherwise)
  Model model = createModel(arch, o);
  LoadReport report =
      loadWeightsFile(*model, dir + "/" + arch + ".pth", loadOptionsFor(*model, false));
  EXPECT_EQ(report.loaded, stateDict(*model).size());

  testing::expectParity(*model, inputs, expected, arch, "x1", kZooTolerance);
}

INSTANTIATE_TEST_SUITE_P(EfficientNet, ZooParity,
                         ::testing::Values("tf_efficientnet_b0", "tf_efficientnet_b3",
                                           "efficientnet_b0", "efficientnet_b2"));
INSTANTIATE_TEST_SUITE_P(PNASNet, ZooParity, ::testing::Values("pnasnet5large"));
INSTANTIATE_TEST_SUITE_P(ResNetD, ZooParity, ::testing::Values("resnet26d"));

TEST(EfficientNetNames, ReferenceSpellingsAndSuffixes) {
  EXPECT_EQ(architectureInfo("tf_efficientnet_b0_ap").name, "tf_efficientnet_b0");
  EXPECT_EQ(architectureInfo("tf_efficientnet_l2_ns").name, "tf_efficientnet_l2");
  EXPECT_EQ(architectureInfo("tf_efficientnet_b7.ns_jft_in1k").name, "tf_efficientnet_b7");
  EXPECT_EQ(architectureInfo("efficientnet_b3").family, &efficientNetFamily());
  EXPECT_EQ(createModel("tf_efficientnet_b0_ap", 10)->family().name, "efficientnet");
  // timm's pretrained cfg of tf_efficientnet_b3.ns_jft_in1k: 300 px, crop_pct 0.904, bicubic.
  const ArchInfo b3 = architectureInfo("tf_efficientnet_b3_ns");
  EXPECT_EQ(b3.defaultSize, 300);
  EXPECT_EQ(b3.testSize, 300);
  EXPECT_DOUBLE_EQ(b3.cropFraction, 0.904);
  EXPECT_TRUE(b3.bicubic);
  EXPECT_THROW(architectureInfo("efficientnet_b9"), UsageError);
  EXPECT_THROW(architectureInfo("efficientnet_l2"), UsageError);  // timm: TF port only
  EXPECT_THROW(architectureInfo("EfficientNet"), UsageError);     // needs --EfficientNet-models
}

// Parameter counts of timm 1000-class models (timm.create_model(name).parameters()), the
// published figures: B0 5.29M, B3 12.23M, B7 66.35M; torchvision's efficientnet_b2 9.11M.
TEST(EfficientNetNames, ParameterCountsMatchTimm) {
  EXPECT_EQ(parameterCount("tf_efficientnet_b0"), 5288548);
  EXPECT_EQ(parameterCount("efficientnet_b2"), 9109994);
  EXPECT_EQ(parameterCount("tf_efficientnet_b3"), 12233232);
}

TEST(EfficientNetRecipe, ClassifierAndHeadLearnHeadNormInTrainMode) {
  ModelOptions o;
  o.numClasses = 5;
  auto model = std::dynamic_pointer_cast<EfficientNetImpl>(createModel("efficientnet_b0", o));
  ASSERT_TRUE(model);
  Model base = model;
  auto recipe = engine::finetuneRecipe(base, /*bnAffine=*/false);
  std::vector<std::string> trainable;
  for (const auto& p : model->named_parameters())
    for (const auto& t : recipe.trainable)
      if (p.value().is_same(t)) trainable.push_back(p.key());
  EXPECT_EQ(trainable,
            (std::vector<std::string>{"conv_head.weight", "classifier.weight", "classifier.bias"}));
  engine::setFinetuneMode(*model, recipe);
  EXPECT_TRUE(model->bn2->is_training());
  EXPECT_TRUE(model->conv_head->is_training());
  EXPECT_FALSE(model->bn1->is_training());
  EXPECT_FALSE(model->is_training());
}

TEST(PNASNetNames, RegistryAndTimmLayout) {
  const ArchInfo info = architectureInfo("PNASNet");
  EXPECT_EQ(info.name, "pnasnet5large");
  EXPECT_EQ(info.family, &pnasnetFamily());
  EXPECT_EQ(info.outputStride, 32);
  EXPECT_EQ(info.defaultSize, 331);
  EXPECT_EQ(info.testSize, 331);  // timm's pnasnet5large.tf_in1k: crop_pct 0.911, bicubic
  EXPECT_DOUBLE_EQ(info.cropFraction, 0.911);
  EXPECT_TRUE(info.bicubic);
  EXPECT_EQ(info.mean, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(info.std, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(architectureInfo("pnasnet5large").name, "pnasnet5large");
  // sum(p.numel() for p in timm.create_model('pnasnet5large').parameters()), 1000 classes.
  EXPECT_EQ(parameterCount("PNASNet"), 86057668);
  // len(timm.create_model('pnasnet5large').state_dict()) and some of its names.
  auto sd = stateDict(*createModel("pnasnet5large", 10));
  EXPECT_EQ(sd.size(), 1380u);
  EXPECT_EQ(sd.begin()->key(), "conv_0.conv.weight");
  for (const char* key :
       {"conv_0.bn.num_batches_tracked", "cell_stem_0.comb_iter_0_right.conv.weight",
        "cell_stem_0.comb_iter_4_right.bn.running_var",
        "cell_stem_1.conv_prev_1x1.path_2.conv.weight", "cell_4.comb_iter_4_right.conv.weight",
        "cell_11.comb_iter_3_left.separable_2.depthwise_conv2d.weight", "last_linear.bias"})
    EXPECT_TRUE(sd.contains(key)) << key;
  EXPECT_FALSE(sd.contains("cell_5.comb_iter_4_right.conv.weight"));  // identity there
  EXPECT_EQ(sd.at("cell_9.conv_prev_1x1.final_path_bn.running_mean").size(0), 864);
  EXPECT_EQ(sd.at("last_linear.weight").sizes().vec(), (std::vector<int64_t>{10, 4320}));
}

TEST(PNASNetRecipe, LastThreeCellsAndClassifierLearnCellsInTrainMode) {
  ModelOptions o;
  o.numClasses = 5;
  auto model = std::dynamic_pointer_cast<PNASNetImpl>(createModel("PNASNet", o));
  ASSERT_TRUE(model);
  Model base = model;
  for (bool bnAffine : {false, true}) {
    auto recipe = engine::finetuneRecipe(base, bnAffine);
    size_t expected = 0;
    for (const auto& p : model->named_parameters()) {
      const std::string& k = p.key();
      if (k.rfind("cell_9.", 0) == 0 || k.rfind("cell_10.", 0) == 0 ||
          k.rfind("cell_11.", 0) == 0 || k.rfind("last_linear.", 0) == 0)
        ++expected;
    }
    EXPECT_EQ(recipe.trainable.size(), expected);
    engine::freezeForFinetune(*model, recipe);
    for (const auto& p : model->named_parameters()) {
      const std::string& k = p.key();
      const bool learns = k.rfind("cell_9.", 0) == 0 || k.rfind("cell_10.", 0) == 0 ||
                          k.rfind("cell_11.", 0) == 0 || k.rfind("last_linear.", 0) == 0;
      EXPECT_EQ(p.value().requires_grad(), learns) << k;
    }
    engine::setFinetuneMode(*model, recipe);
    EXPECT_FALSE(model->is_training());
    EXPECT_FALSE(model->cell(8)->is_training());
    EXPECT_FALSE(model->cell_stem_0->is_training());
    for (int64_t i : {9, 10, 11}) {
      EXPECT_TRUE(model->cell(i)->is_training()) << i;
      EXPECT_TRUE(model->cell(i)->comb_iter_0_left->bn_sep_1->is_training()) << i;
    }
  }
}

}  // namespace
}  // namespace fixres::models
