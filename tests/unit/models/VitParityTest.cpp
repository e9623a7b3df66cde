// Vision Transformers, DeiT and ConvNeXt against timm (tests/reference/vit_reference.py, from the
// timm source in ../shared/oracles; skipped when absent). Each model is built for three image
// sizes (the default, 288 x 288 and 160 x 256) and loads the weight file of the default size, a
// ViT resampling its position embedding as timm's checkpoint_filter_fn does: eval logits and
// embeddings and train-mode logits against timm's model of that size. A ViT built at the default
// size with dynamicImgSize against timm's dynamic_img_size model at every size. And the position
// embedding resampling on its own against timm's resample_abs_pos_embed. Relative L2 error < 1e-5
// (models), < 1e-6 (resampling).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <filesystem>
#include <iostream>
#include <string>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/models/Family.h"
#include "fixres/models/PosEmbed.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::models {
namespace {

using fixres::testing::cachedReference;
using fixres::testing::referenceTensor;
using fixres::testing::relErr;

constexpr double kEvalTolerance = 1e-5;
// No batch statistics and no dropout (rates 0) in these models: train mode computes what eval
// mode does, so it keeps the eval bound.
constexpr double kTrainTolerance = 1e-5;
constexpr double kPosEmbedTolerance = 1e-6;

std::string vitOraclesDir() {
  return std::string(FIXRES_SOURCE_DIR) + "/../shared/oracles";
}
bool haveVitOracles() {
  return std::filesystem::exists(vitOraclesDir() + "/timm/__init__.py");
}

const std::string& vitDir() {
  static const std::string dir = [] {
    std::string made;
    cachedReference("vit_reference.py", "make {dir} " + vitOraclesDir(), &made);
    return made;
  }();
  return dir;
}

bool contains(const c10::IValue& dict, const std::string& key) {
  return dict.toGenericDict().contains(key);
}

// Built as the reference: 10 classes, no dropout or stochastic depth (train mode deterministic),
// loaded from the default-size file (strict: every tensor of the model, nothing else).
Model loadedModel(const std::string& arch, std::array<int64_t, 2> imageSize, bool dynamic) {
  ModelOptions o;
  o.numClasses = 10;
  o.dropRate = 0;
  o.dropPathRate = 0;
  o.imageSize = imageSize;
  o.dynamicImgSize = dynamic;
  Model model = createModel(arch, o);
  const std::string path = vitDir() + "/" + arch + ".pth";
  LoadReport report = loadWeightsFile(*model, path, loadOptionsFor(*model, false));
  EXPECT_EQ(report.loaded, stateDict(*model).size()) << arch << " " << path;
  EXPECT_TRUE(report.ignored.empty()) << arch << ": " << report.ignored.size() << " ignored";
  return model;
}

const char* const kSizeTags[] = {"s0", "s1", "s2"};  // default, 288 x 288, 160 x 256

class VitParity : public ::testing::TestWithParam<std::string> {};

TEST_P(VitParity, MatchesTimmAtEachImageSize) {
  const std::string arch = GetParam();
  FIXRES_SKIP_UNLESS(haveVitOracles(), "oracles", "no timm source at " << vitOraclesDir());
  const std::string dir = vitDir();
  ASSERT_TRUE(std::filesystem::exists(dir + "/" + arch + "_expected.pth")) << dir;
  const c10::IValue expected = readTorchFile(dir + "/" + arch + "_expected.pth");
  const bool vit = arch.rfind("convnext", 0) != 0;
  ASSERT_EQ(contains(expected, "dyn_eval_logits_s0"), vit) << arch;
  torch::NoGradGuard noGrad;

  // A ViT at the default size that resamples its embedding for each input's grid.
  Model dynamic;
  if (vit) dynamic = loadedModel(arch, {0, 0}, /*dynamic=*/true);

  for (const std::string tag : kSizeTags) {
    const at::Tensor input = referenceTensor(expected, "input_" + tag);
    const int64_t h = input.size(2), w = input.size(3);
    // s0: the architecture's own size ({0, 0}); the others name theirs.
    const std::array<int64_t, 2> size =
        tag == "s0" ? std::array<int64_t, 2>{0, 0} : std::array<int64_t, 2>{h, w};
    Model model = loadedModel(arch, size, /*dynamic=*/false);
    const std::string what = arch + " " + std::to_string(h) + "x" + std::to_string(w);

    model->eval();
    auto [logits, emb] = model->forwardWithEmbedding(input);
    const double eLogits = relErr(logits, referenceTensor(expected, "eval_logits_" + tag));
    const double eEmb = relErr(emb, referenceTensor(expected, "eval_embedding_" + tag));
    EXPECT_LT(eLogits, kEvalTolerance) << what << " eval logits";
    EXPECT_LT(eEmb, kEvalTolerance) << what << " eval embedding";

    model->train();
    const double eTrain =
        relErr(model->forward(input), referenceTensor(expected, "train_logits_" + tag));
    EXPECT_LT(eTrain, kTrainTolerance) << what << " train logits";

    std::cout << "[ parity ] " << what << " eval logits " << eLogits << " embedding " << eEmb
              << " train " << eTrain;
    if (vit) {
      dynamic->eval();
      const double eDyn =
          relErr(dynamic->forward(input), referenceTensor(expected, "dyn_eval_logits_" + tag));
      EXPECT_LT(eDyn, kEvalTolerance) << what << " dynamic eval logits";
      std::cout << " dynamic " << eDyn;
    }
    std::cout << "\n";
  }
}

// vit_small_patch16_224 (vit_tiny's code at another width) and deit_tiny_patch16_224 (the
// distilled model's code without the distillation token) were measured once (docs/models.md).
INSTANTIATE_TEST_SUITE_P(VisionTransformer, VitParity,
                         ::testing::Values("vit_tiny_patch16_224",
                                           "vit_medium_patch16_reg4_gap_256",
                                           "vit_small_patch14_reg4_dinov2"));
INSTANTIATE_TEST_SUITE_P(DeiT, VitParity, ::testing::Values("deit_tiny_distilled_patch16_224"));
INSTANTIATE_TEST_SUITE_P(ConvNeXt, VitParity, ::testing::Values("convnext_nano", "convnext_tiny"));

// resampleAbsPosEmbed against timm's resample_abs_pos_embed: growing, shrinking (antialiased)
// and non-square grids, 0, 1 and 2 prefix tokens, a non-square old grid, and timm's early return
// (the token count fits the new square grid: the input comes back unchanged).
TEST(PosEmbedParity, MatchesTimmResampleAbsPosEmbed) {
  FIXRES_SKIP_UNLESS(haveVitOracles(), "oracles", "no timm source at " << vitOraclesDir());
  const std::string path = vitDir() + "/posembed.pth";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const c10::IValue cases = readTorchFile(path);
  int k = 0;
  for (; contains(cases, "posembed_in_" + std::to_string(k)); ++k) {
    const std::string n = std::to_string(k);
    const at::Tensor in = referenceTensor(cases, "posembed_in_" + n);
    const at::Tensor want = referenceTensor(cases, "posembed_out_" + n);
    const at::Tensor g = referenceTensor(cases, "posembed_grid_" + n).to(at::kLong);
    ASSERT_EQ(g.numel(), 5) << n;
    const int64_t newH = g[0].item<int64_t>(), newW = g[1].item<int64_t>();
    const int64_t oldH = g[2].item<int64_t>(), oldW = g[3].item<int64_t>();
    const int64_t prefix = g[4].item<int64_t>();
    const at::Tensor got = resampleAbsPosEmbed(in, {newH, newW}, {oldH, oldW}, prefix);
    const std::string what = std::to_string(oldH) + "x" + std::to_string(oldW) + " -> " +
                             std::to_string(newH) + "x" + std::to_string(newW) + " prefix " +
                             std::to_string(prefix);
    ASSERT_EQ(got.sizes(), want.sizes()) << what;
    const double err = relErr(got, want);
    EXPECT_LT(err, kPosEmbedTolerance) << what;
    std::cout << "[ parity ] pos_embed " << what << ": relative L2 error " << err << "\n";
  }
  EXPECT_GT(k, 0) << path;
}

}  // namespace
}  // namespace fixres::models

namespace fixres::models {
namespace {

// sum(p.numel() for p in timm.create_model(name).parameters()) and len(state_dict()), 1000
// classes, timm 1.0.29 (vit_large_patch16_384's 305M parameters are left out: too slow to build
// in a unit test).
TEST(TransformerNames, ParameterAndStateDictCountsMatchTimm) {
  const struct {
    const char* name;
    int64_t parameters;
    size_t entries;
  } kTimm[] = {{"vit_tiny_patch16_224", 5717416, 152},
               {"vit_small_patch16_224", 22050664, 152},
               {"vit_base_patch16_224", 86567656, 152},
               {"vit_medium_patch16_reg4_gap_256", 38881768, 176},
               {"vit_small_patch14_reg4_dinov2", 22442344, 177},
               {"vit_base_patch14_reg4_dinov2", 87351016, 177},
               {"deit_tiny_distilled_patch16_224", 5910800, 155},
               {"deit3_small_patch16_224", 22059496, 176},
               {"convnext_nano", 15593560, 146},
               {"convnext_tiny", 28589128, 182}};
  for (const auto& t : kTimm) {
    Model m = createModel(t.name, 1000);
    int64_t n = 0;
    for (const auto& p : m->parameters()) n += p.numel();
    EXPECT_EQ(n, t.parameters) << t.name;
    EXPECT_EQ(stateDict(*m).size(), t.entries) << t.name;
  }
  EXPECT_EQ(architectureInfo("vit_small_patch16_224.augreg_in21k_ft_in1k").name,
            "vit_small_patch16_224");
  EXPECT_EQ(architectureInfo("convnext_tiny.fb_in1k").testSize, 288);
  EXPECT_EQ(architectureInfo("vit_base_patch16_384").defaultSize, 384);
  // DINOv2 with registers: 518 px (a 37 x 37 grid), crop 1.0, ImageNet's mean.
  EXPECT_EQ(architectureInfo("vit_large_patch14_reg4_dinov2.lvd142m").defaultSize, 518);
  EXPECT_EQ(architectureInfo("vit_small_patch14_reg4_dinov2").cropFraction, 1.0);
  EXPECT_EQ(architectureInfo("vit_small_patch14_reg4_dinov2").mean,
            (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(architectureInfo("deit_tiny_patch16_224").mean,
            (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(architectureInfo("vit_tiny_patch16_224").mean,
            (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_THROW(createModel("vit_tiny_patch16_224", ModelOptions{10, -1, -1, {230, 230}, false}),
               UsageError);  // not a multiple of the 16 px patch
}

}  // namespace
}  // namespace fixres::models
