// --finetune-scope and --layer-decay: which parameters each scope trains for the ViT, ConvNeXt
// and CNN families, and the learning rates layer-wise decay gives, against their definitions
// (docs/models.md): under `all` with decay d, a ViT of depth L has its head and final norm at 1,
// block i at d^(L - i) and the embeddings (tokens, pos_embed, patch_embed) at d^(L + 1); a
// ConvNeXt its head at 1, stage s at d^(4 - s), the stem at d^5; a ResNet's rates are timm's
// param_groups_layer_decay's (tests/reference/layer_decay_reference.py: its group_matcher, a
// layer a block).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"
#include "fixres/optim/Optimizer.h"
#include "fixres/step/FinetuneRecipe.h"

namespace fixres::engine {
namespace {

using models::FinetuneScope;

// name -> learning-rate scale of the recipe's trainable tensors (1 when it gives none).
std::map<std::string, double> scopedNames(models::Model& model, FinetuneScope scope,
                                          double decay = 0.5) {
  auto r = finetuneRecipe(model, false, scope, decay);
  std::map<std::string, double> out;
  for (const auto& p : model->named_parameters())
    for (size_t k = 0; k < r.trainable.size(); ++k)
      if (p.value().is_same(r.trainable[k])) out[p.key()] = r.lrScale.empty() ? 1.0 : r.lrScale[k];
  return out;
}

std::set<std::string> keys(const std::map<std::string, double>& m) {
  std::set<std::string> s;
  for (const auto& e : m) s.insert(e.first);
  return s;
}

TEST(FinetuneScope, VitHeadHeadPosRecipeAndAll) {
  models::Model vit = models::createModel("vit_demo", 5);
  const std::set<std::string> head = {"head.weight", "head.bias", "norm.weight", "norm.bias"};
  EXPECT_EQ(keys(scopedNames(vit, FinetuneScope::kHead)), head);
  auto headPos = head;
  headPos.insert("pos_embed");
  EXPECT_EQ(keys(scopedNames(vit, FinetuneScope::kHeadPos)), headPos);
  EXPECT_EQ(keys(scopedNames(vit, FinetuneScope::kRecipe)), headPos);  // the ViT's default
  EXPECT_TRUE(finetuneRecipe(vit, false, FinetuneScope::kHead).trainMode.empty());

  const auto all = scopedNames(vit, FinetuneScope::kAll, 0.5);
  EXPECT_EQ(all.size(), vit->parameters().size());
  const int depth = 6;  // vit_demo
  for (const auto& [name, scale] : all) {
    double want = 1;
    if (name.rfind("blocks.", 0) == 0) want = std::pow(0.5, depth - std::stoi(name.substr(7)));
    if (name == "cls_token" || name == "pos_embed" || name.rfind("patch_embed.", 0) == 0)
      want = std::pow(0.5, depth + 1);
    EXPECT_DOUBLE_EQ(scale, want) << name;
  }
  // Distilled DeiT: both heads learn.
  models::Model deit = models::createModel("deit_tiny_distilled_patch16_224", 5);
  auto d = keys(scopedNames(deit, FinetuneScope::kHead));
  EXPECT_TRUE(d.count("head_dist.weight") && d.count("head.weight") && d.count("norm.weight"));
  EXPECT_EQ(d.size(), 6u);
}

TEST(FinetuneScope, ConvNeXtHeadNormIsTheLastBatchNorm) {
  models::Model cn = models::createModel("convnext_demo", 5);
  const std::set<std::string> head = {"head.fc.weight", "head.fc.bias", "head.norm.weight",
                                      "head.norm.bias"};
  EXPECT_EQ(keys(scopedNames(cn, FinetuneScope::kRecipe)), head);
  EXPECT_EQ(keys(scopedNames(cn, FinetuneScope::kHead)), head);
  EXPECT_THROW(finetuneRecipe(cn, false, FinetuneScope::kHeadPos), UsageError);
  for (const auto& [name, scale] : scopedNames(cn, FinetuneScope::kAll, 0.5)) {
    double want = 1;
    if (name.rfind("stages.", 0) == 0) want = std::pow(0.5, 4 - std::stoi(name.substr(7, 1)));
    if (name.rfind("stem.", 0) == 0) want = std::pow(0.5, 5);
    EXPECT_DOUBLE_EQ(scale, want) << name;
  }
}

TEST(FinetuneScope, CnnAllTrainsEverythingAndHasNoPositionEmbedding) {
  models::Model r = models::createModel("resnet_tiny", 5);
  EXPECT_EQ(scopedNames(r, FinetuneScope::kAll).size(), r->parameters().size());
  EXPECT_EQ(keys(scopedNames(r, FinetuneScope::kHead)),
            keys(scopedNames(r, FinetuneScope::kRecipe)));
  EXPECT_THROW(finetuneRecipe(r, false, FinetuneScope::kHeadPos), UsageError);
}

TEST(FinetuneScope, ResNetLayerDecayIsTimms) {
  const std::string oracles = std::string(FIXRES_SOURCE_DIR) + "/../shared/oracles";
  FIXRES_SKIP_UNLESS(std::filesystem::exists(oracles + "/timm/__init__.py"), "oracles",
                     "no timm source at " << oracles);
  for (const char* arch : {"resnet18", "resnet50"}) {
    SCOPED_TRACE(arch);
    std::map<std::string, double> want;
    std::istringstream in(
        testing::runReference("layer_decay_reference.py", std::string(arch) + " 0.5 " + oracles));
    for (std::string name, scale; in >> name >> scale;) want[name] = std::stod(scale);
    models::Model model = models::createModel(arch, 5);
    const auto got = scopedNames(model, FinetuneScope::kAll, 0.5);
    ASSERT_EQ(keys(got), keys(want));
    for (const auto& [name, scale] : want) EXPECT_DOUBLE_EQ(got.at(name), scale) << name;
  }
}

// The optimizer's groups carry the multipliers: each parameter's group has lr * its scale, after
// optim::makeOptimizer and after optim::setLearningRate with the groups' scales.
TEST(FinetuneScope, LayerDecayReachesTheOptimizersGroups) {
  models::Model vit = models::createModel("vit_demo", 5);
  auto recipe = finetuneRecipe(vit, false, FinetuneScope::kAll, 0.5);
  std::map<const void*, double> scale;
  for (size_t k = 0; k < recipe.trainable.size(); ++k)
    scale[recipe.trainable[k].unsafeGetTensorImpl()] = recipe.lrScale[k];
  optim::OptimizerOptions o;
  o.kind = optim::optimizerNamed("adamw");
  o.learningRate = 0.01;
  o.lrScale = [&](const torch::Tensor& p) { return scale.at(p.unsafeGetTensorImpl()); };
  auto opt = optim::makeOptimizer(*vit, o);
  const auto scales = optim::groupLearningRateScales(*vit, o);
  ASSERT_EQ(scales.size(), opt->param_groups().size());
  for (double lr : {0.01, 0.2}) {
    optim::setLearningRate(*opt, lr, scales);
    size_t seen = 0;
    for (auto& g : opt->param_groups())
      for (const auto& p : g.params()) {
        EXPECT_DOUBLE_EQ(g.options().get_lr(), lr * scale.at(p.unsafeGetTensorImpl()));
        ++seen;
      }
    EXPECT_EQ(seen, vit->parameters().size());
  }
}

}  // namespace
}  // namespace fixres::engine
