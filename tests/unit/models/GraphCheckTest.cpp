// Every registered family's graph (ModelImpl::writeGraph, what ONNX export writes) held to its
// forward(): the graph evaluated operation by operation with LibTorch tensors
// (TensorGraphWriter, each operation by its ONNX definition) gives the logits forward() gives, at
// two fixed sizes (one odd, where TensorFlow "same" padding is asymmetric) and at a third size
// written without sizes (--dynamic-size) where the family allows it. In float64, with every
// parameter and running statistic moved off its initial value (a layer scale of 1e-6 or a
// BatchNorm at mean 0 and variance 1 would hide a wrong block), so the bound is 1e-11 of the
// largest logit: far above float64 rounding through these depths, far below any wrong operation.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/Family.h"
#include "fixres/models/Registry.h"
#include "fixres/models/TensorGraphWriter.h"

namespace fixres::models {
namespace {

// The architectures checked per family: its smallest, and the variants whose graph differs
// (TensorFlow padding, grouped convolutions, the small-image stem, two heads, register tokens,
// a class token with registers).
const std::map<std::string, std::vector<std::string>>& checkedNames() {
  static const std::map<std::string, std::vector<std::string>> kNames = {
      {"resnet", {"resnet18", "resnext50_32x4d", "resnet_tiny"}},
      {"efficientnet", {"efficientnet_b0", "tf_efficientnet_b0"}},
      {"resnext-wsl", {"resnext101_32x16d"}},
      {"pnasnet", {"pnasnet5large"}},
      {"vit",
       {"vit_demo", "deit_tiny_distilled_patch16_224", "vit_medium_patch16_reg4_gap_256",
        "vit_small_patch14_reg4_dinov2"}},
      {"convnext", {"convnext_demo", "convnext_atto"}},
      {"resnet-d", {"resnet26d"}},
  };
  return kNames;
}

// Graphs that depend on the input size and so refuse --dynamic-size.
bool fixedSizeOnly(const std::string& family, const std::string& name) {
  return family == "pnasnet" || name.rfind("tf_", 0) == 0;
}

void moveOffInitialValues(ModelImpl& model) {
  torch::NoGradGuard noGrad;
  for (auto& p : model.named_parameters()) {
    if (p.value().dim() <= 1)
      p.value().add_(torch::rand_like(p.value()) * 0.4 - 0.2);
    else
      p.value().add_(torch::randn_like(p.value()) * 0.02);
  }
  for (auto& b : model.named_buffers()) {
    const std::string& key = b.key();
    if (key.size() >= 12 && key.compare(key.size() - 12, 12, "running_mean") == 0)
      b.value().uniform_(-0.2, 0.2);
    else if (key.size() >= 11 && key.compare(key.size() - 11, 11, "running_var") == 0)
      b.value().uniform_(0.5, 1.5);
  }
}

// max |graph - forward| / max |forward| at `size` x `width` (default square); the graph written
// with sizes or without.
double graphError(ModelImpl& model, int64_t size, bool fixedSize, int64_t width = 0) {
  torch::NoGradGuard noGrad;
  const torch::Tensor x = torch::randn({2, 3, size, width > 0 ? width : size}, torch::kDouble);
  const torch::Tensor expected = model.forward(x);
  TensorGraphWriter writer(x, fixedSize);
  EXPECT_TRUE(model.writeGraph(writer)) << "no graph";
  const torch::Tensor& got = writer.logits();
  if (!got.defined() || got.sizes() != expected.sizes()) {
    ADD_FAILURE() << "the graph's output has another shape";
    return 1;
  }
  return (got - expected).abs().max().item<double>() / expected.abs().max().item<double>();
}

class GraphCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(GraphCheck, WriteGraphEqualsForward) {
  const std::string familyName = GetParam();
  torch::manual_seed(0);
  for (const std::string& name : checkedNames().at(familyName)) {
    SCOPED_TRACE(name);
    ModelOptions options;
    options.numClasses = 7;
    options.dynamicImgSize = true;  // transformers: forward at any size, as the graph is written
    Model model = createModel(name, options);
    model->to(torch::kDouble);
    moveOffInitialValues(*model);
    model->eval();
    const bool vit = familyName == "vit";
    // ViTs at whole patch grids: 8 and 12 patches of 4 or 16 px, 2 and 3 of 14 px (DINOv2).
    const bool patch14 = name.find("patch14") != std::string::npos;
    const std::vector<int64_t> sizes = !vit      ? std::vector<int64_t>{64, 75}
                                       : patch14 ? std::vector<int64_t>{28, 42}
                                                 : std::vector<int64_t>{32, 48};
    for (const int64_t size : sizes) {
      const double error = graphError(*model, size, /*fixedSize=*/true);
      EXPECT_LE(error, 1e-11) << "at " << size << " px";
    }
    if (fixedSizeOnly(familyName, name)) {
      TensorGraphWriter writer(torch::zeros({1, 3, 64, 64}, torch::kDouble), false);
      EXPECT_THROW(model->writeGraph(writer), UsageError) << "a dynamic size accepted";
    } else if (vit) {  // the position embedding resampled in the graph, non-square too
      const int64_t patch = patch14 ? 14 : name == "vit_demo" ? 4 : 16;
      EXPECT_LE(graphError(*model, 3 * patch, /*fixedSize=*/false, 5 * patch), 1e-11)
          << "dynamic size, " << 3 * patch << "x" << 5 * patch << " px";
    } else {
      EXPECT_LE(graphError(*model, 57, /*fixedSize=*/false), 1e-11) << "dynamic size, 57 px";
    }
  }
}

std::vector<std::string> registeredFamilies() {
  std::vector<std::string> out;
  for (const ArchitectureFamily* f : architectureFamilies()) out.push_back(f->name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Families, GraphCheck, ::testing::ValuesIn(registeredFamilies()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(GraphCheckCoverage, EveryRegisteredFamilyHasCheckedNames) {
  for (const std::string& family : registeredFamilies()) {
    SCOPED_TRACE(family);
    ASSERT_TRUE(checkedNames().count(family)) << "no graph check: add its names to checkedNames()";
    for (const std::string& name : checkedNames().at(family))
      EXPECT_EQ(architectureInfo(name).family->name, family) << name;
  }
}

}  // namespace
}  // namespace fixres::models
