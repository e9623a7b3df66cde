// ResNet family: registry, torchvision layout and numerical parity with torchvision (reference
// values from tests/reference/models_reference.py, run with /usr/bin/python3).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <set>

#include "../Reference.h"
#include "ParameterCount.h"
#include "Parity.h"
#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"
#include "fixres/models/WeightIO.h"

namespace fixres::models {
namespace {

using fixres::testing::parameterCount;
using fixres::testing::referenceDir;
using fixres::testing::referenceTensor;
using fixres::testing::relErr;

constexpr double kTolerance = 1e-5;  // relative L2 error, fp32

TEST(ModelRegistry, AcceptsTorchvisionAndFixResNames) {
  auto names = knownArchitectures();
  for (const char* n : {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
                        "resnext50_32x4d", "resnext101_32x8d", "resnext101_32x48d",
                        "wide_resnet50_2", "resnet_tiny", "ResNet50", "IGAM_Resnext101_32x48d"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_EQ(resnetConfig("ResNet50").name, "resnet50");
  EXPECT_EQ(resnetConfig("IGAM_Resnext101_32x48d").widthPerGroup, 48);
  EXPECT_EQ(resnetConfig("IGAM_Resnext101_32x48d").groups, 32);
  // torchvision's weights: 224 px, tested on a 224 crop of the image resized to 256, bilinear.
  const ArchInfo info = architectureInfo("ResNet50");
  EXPECT_EQ(info.defaultSize, 224);
  EXPECT_EQ(info.testSize, 224);
  EXPECT_DOUBLE_EQ(info.cropFraction, 0.875);
  EXPECT_FALSE(info.bicubic);
}

// Each registered family answers for its own names and aliases, and no name is claimed twice.
TEST(ModelRegistry, EveryFamilyAnswersForItsNames) {
  std::set<std::string> seen;
  for (const ArchitectureFamily* f : architectureFamilies()) {
    EXPECT_TRUE(f->find && f->create && f->finetune) << f->name;
    for (const auto& n : f->names) {
      EXPECT_EQ(architectureInfo(n).family, f) << n;
      EXPECT_EQ(architectureInfo(n).name, n);
      EXPECT_TRUE(seen.insert(n).second) << n;
    }
    for (const auto& n : f->aliases) {
      EXPECT_EQ(architectureInfo(n).family, f) << n;
      EXPECT_NE(architectureInfo(n).name, n);
      EXPECT_TRUE(seen.insert(n).second) << n;
    }
  }
  EXPECT_EQ(seen.size(), knownArchitectures().size());
  EXPECT_EQ(knownArchitectures().front(), "resnet18");
  EXPECT_EQ(knownArchitectures().back(), "PNASNet");
  EXPECT_EQ(&createModel("resnet_tiny", 3)->family(), &resnetFamily());
}

TEST(ModelRegistry, UnknownNameIsUsageErrorListingKnownNames) {
  try {
    createModel("resnet51");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("resnet51"), std::string::npos) << msg;
    EXPECT_NE(msg.find("resnet50"), std::string::npos) << msg;
    EXPECT_NE(msg.find("IGAM_Resnext101_32x48d"), std::string::npos) << msg;
  }
  EXPECT_THROW(createModel("resnet18", 0), UsageError);
}

TEST(ModelRegistry, ParameterCountsEqualTorchvision) {
  // sum(p.numel() for p in model.parameters()) with torchvision 0.14, 1000 classes;
  // resnext101_32x48d = ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=48).
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"resnet18", 11689512},
      {"resnet34", 21797672},
      {"resnet50", 25557032},
      {"resnet101", 44549160},
      {"resnet152", 60192808},
      {"resnext50_32x4d", 25028904},
      {"resnext101_32x8d", 88791336},
      {"wide_resnet50_2", 68883240},
      {"IGAM_Resnext101_32x48d", 828411176},
      {"resnet_tiny", 436536}};  // TinyResNet() in models_reference.py
  for (const auto& [name, count] : expected) EXPECT_EQ(parameterCount(name), count) << name;
}

TEST(Model, BuiltModelsHaveTheCountedParametersAndTorchvisionNames) {
  for (const char* name : {"resnet18", "resnet50", "resnet_tiny"}) {
    auto model = createModel(name, 10);
    int64_t n = 0;
    for (const auto& p : model->parameters()) n += p.numel();
    EXPECT_EQ(n, parameterCount(name, 10)) << name;
  }
  auto sd = stateDict(*createModel("resnet50"));
  EXPECT_EQ(sd.size(), 320u);  // len(torchvision.models.resnet50().state_dict())
  auto it = sd.begin();
  EXPECT_EQ(it->key(), "conv1.weight");
  for (const char* key :
       {"bn1.num_batches_tracked", "layer1.0.downsample.0.weight",
        "layer1.0.downsample.1.running_var", "layer4.2.bn3.num_batches_tracked", "fc.bias"})
    EXPECT_TRUE(sd.contains(key)) << key;
  EXPECT_FALSE(sd.contains("conv1.bias"));
}

TEST(Model, LastBatchNormAndEmbeddingDim) {
  ResNet r50(resnetConfig("resnet50", 7));
  EXPECT_EQ(r50->lastBatchNorm().get(), r50->layer4[2]->as<BlockImpl>()->bn3.get());
  EXPECT_EQ(r50->embeddingDim(), 2048);
  EXPECT_EQ(r50->classifier()->weight.sizes(), (std::vector<int64_t>{7, 2048}));
  ResNet tiny(resnetConfig("resnet_tiny", 10));
  EXPECT_EQ(tiny->lastBatchNorm().get(), tiny->layer4[0]->as<BlockImpl>()->bn2.get());
  EXPECT_EQ(tiny->embeddingDim(), 128);
  torch::NoGradGuard noGrad;
  tiny->eval();
  auto [logits, emb] = tiny->forwardWithEmbedding(torch::randn({3, 3, 17, 23}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(emb.sizes(), (std::vector<int64_t>{3, 128}));
  EXPECT_THROW(tiny->forward(torch::randn({1, 1, 8, 8})), UsageError);
}

class ModelParity : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelParity, MatchesTorchvisionInEvalAndTrainMode) {
  const std::string arch = GetParam();
  const std::string dir = referenceDir();
  c10::IValue inputs = readTorchFile(dir + "/inputs.pth");
  c10::IValue expected = readTorchFile(dir + "/" + arch + "_expected.pth");
  auto model = createModel(arch, 10);
  LoadReport report = loadWeightsFile(*model, dir + "/" + arch + ".pth", {});
  EXPECT_EQ(report.loaded, stateDict(*model).size());

  // The eager path (readTorchFile + loadStateDict) gives bit-identical weights.
  auto other = createModel(arch, 10);
  loadStateDict(*other, readTorchFile(dir + "/" + arch + ".pth"), {}, arch);
  auto a = stateDict(*model), b = stateDict(*other);
  for (const auto& e : a) EXPECT_TRUE(torch::equal(e.value(), b.at(e.key()))) << e.key();

  testing::expectParity(*model, inputs, expected, arch, "x0", kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Model, ModelParity,
                         ::testing::Values("resnet18", "resnet50", "resnext50_32x4d",
                                           "resnet_tiny"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fixres::models
