// ResNeXt-101 32x16d against torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32,
// width_per_group=16) (tests/reference/resnext_wsl_reference.py): the same state-dict keys in
// the same order with the same shapes; both names resolve to it; its fine-tuning is the FixRes
// recipe (classifier and the last BatchNorm).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"
#include "fixres/models/WeightIO.h"
#include "fixres/step/FinetuneRecipe.h"

namespace fixres::models {
namespace {

TEST(ResNeXtWsl, KeysAndShapesAreTorchvisions) {
  const std::string reference = testing::runReference("resnext_wsl_reference.py", "16");
  std::vector<std::string> expected;
  std::istringstream in(reference);
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  ASSERT_EQ(expected.size(), 627u);  // len(state_dict()) of torchvision's ResNeXt-101, the count
  const std::string count = expected.back();
  expected.pop_back();
  for (const char* name : {"resnext101_32x16d", "ig_resnext101_32x16d"})
    EXPECT_EQ(architectureInfo(name).name, "resnext101_32x16d") << name;
  auto model = createModel("ig_resnext101_32x16d", 10);
  std::vector<std::string> got;
  int64_t parameters = 0;
  for (const auto& e : stateDict(*model)) {
    std::string shape;
    for (int64_t d : e.value().sizes()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    got.push_back(e.key() + " " + shape);
  }
  for (const auto& p : model->parameters()) parameters += p.numel();
  EXPECT_EQ(got, expected);
  EXPECT_EQ("parameters " + std::to_string(parameters), count);

  const auto recipe = engine::finetuneRecipe(model, /*bnAffine=*/false);
  auto& resnet = dynamic_cast<ResNetImpl&>(*model);
  ASSERT_EQ(recipe.trainable.size(), 2u);  // fc.weight, fc.bias
  EXPECT_TRUE(recipe.trainable[0].is_same(resnet.classifier()->weight));
  ASSERT_EQ(recipe.trainMode.size(), 1u);
  EXPECT_EQ(recipe.trainMode[0].get(), resnet.lastBatchNorm().ptr().get());
}

}  // namespace
}  // namespace fixres::models
