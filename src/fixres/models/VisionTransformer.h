// Vision Transformers (Dosovitskiy et al. 2021) with timm's module layout and state-dict names:
// cls_token, reg_token, dist_token, pos_embed, patch_embed.proj, blocks.N.{norm1, attn.qkv,
// attn.proj, ls1.gamma, norm2, mlp.fc1, mlp.fc2, ls2.gamma}, norm, fc_norm, head, head_dist.
// Covers timm's VisionTransformer as the vit_* and deit_* models configure it (class token or
// none, register tokens, position embedding over the patches only or also the prefix tokens,
// token or average pooling, layer scale) and DeiT's distilled variant with its second head.
//
// The position embedding follows the resolution (PosEmbed.h): it is laid out for one image size
// (ModelOptions::imageSize); weights of another grid are resampled when they load (timm's
// checkpoint_filter_fn), and with ModelOptions::dynamicImgSize inputs of any size resample it per
// forward pass (timm's dynamic_img_size). Attention uses the scaled-dot-product kernel of the
// LibTorch it is built with.
#pragma once

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <array>
#include <optional>
#include <string>

#include "fixres/models/Model.h"

namespace fixres::models {

struct VitConfig {
  std::string name;  // canonical name: vit_small_patch16_224, deit_tiny_distilled_patch16_224
  int64_t patchSize = 16;
  int64_t embedDim = 768;
  int64_t depth = 12;
  int64_t numHeads = 12;
  double mlpRatio = 4;
  bool classToken = true;
  int64_t regTokens = 0;
  bool distilled = false;      // DeiT's distillation token and second head (head_dist)
  bool noEmbedClass = false;   // the position embedding covers the patches only
  bool avgPool = false;        // pool: mean of the patch tokens and fc_norm (else class token)
  double layerScale = 0;       // LayerScale's init value (ls1/ls2); 0: none
  int defaultSize = 224;       // the image size of its name (vit_*_224, *_256)
  double defaultDropPath = 0;  // timm's default drop_path_rate is 0 (DeiT recipes: 0.1)
  ModelOptions options;
};

// The ViT family (VisionTransformerFamily.cpp): timm's vit_* and deit_* names below, timm's
// preprocessing, the fine-tuning scopes of a transformer.
const ArchitectureFamily& vitFamily();

// The configuration of `name` when it names a ViT or DeiT fixres builds (timm's tags after a dot
// name the same architecture); std::nullopt for other names.
std::optional<VitConfig> vitConfig(const std::string& name);

// timm's Attention: qkv -> heads -> softmax(q k^T / sqrt(d)) v -> proj.
class VitAttentionImpl : public torch::nn::Module {
 public:
  VitAttentionImpl(int64_t dim, int64_t heads);
  torch::Tensor forward(const torch::Tensor& x);  // N x T x D -> N x T x D
  int64_t heads() const { return heads_; }
  torch::nn::Linear qkv{nullptr}, proj{nullptr};

 private:
  int64_t heads_;
};
TORCH_MODULE(VitAttention);

// timm's Mlp: fc1 -> GELU (erf) -> fc2.
class VitMlpImpl : public torch::nn::Module {
 public:
  VitMlpImpl(int64_t dim, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(VitMlp);

// timm's PatchEmbed: a patch x patch convolution of stride patch (proj).
class VitPatchEmbedImpl : public torch::nn::Module {
 public:
  VitPatchEmbedImpl(int64_t patch, int64_t dim);
  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(VitPatchEmbed);

// timm's LayerScale: x * gamma.
class LayerScaleImpl : public torch::nn::Module {
 public:
  LayerScaleImpl(int64_t dim, double init);
  torch::Tensor forward(const torch::Tensor& x) { return x * gamma; }
  torch::Tensor gamma;
};
TORCH_MODULE(LayerScale);

// One pre-norm block: x + ls1(attn(norm1(x))), then x + ls2(mlp(norm2(x))), drop path on both.
class VitBlockImpl : public torch::nn::Module {
 public:
  VitBlockImpl(int64_t dim, int64_t heads, double mlpRatio, double layerScale, double dropPath);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  VitAttention attn{nullptr};
  VitMlp mlp{nullptr};
  LayerScale ls1{nullptr}, ls2{nullptr};

 private:
  double dropPath_;
};
TORCH_MODULE(VitBlock);

class VisionTransformerImpl : public ModelImpl {
 public:
  explicit VisionTransformerImpl(const VitConfig& config);

  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override;
  int64_t embeddingDim() const override { return config_.embedDim; }
  const ArchitectureFamily& family() const override { return vitFamily(); }
  torch::nn::Linear& classifier() override { return head; }
  std::string classifierPrefix() const override { return "head."; }
  // At a fixed size only: the position embedding is resampled for that size once.
  bool writeGraph(GraphWriter& writer) override;
  std::optional<std::array<int64_t, 2>> layoutImageSize() const override {
    return std::array<int64_t, 2>{grid_[0] * config_.patchSize, grid_[1] * config_.patchSize};
  }
  std::string globalPool() const override { return config_.avgPool ? "avg" : "token"; }

  const VitConfig& config() const { return config_; }
  // The patch grid (rows, columns) the position embedding is laid out for.
  std::array<int64_t, 2> grid() const { return grid_; }
  // Tokens before the patches: class, register and distillation tokens.
  int64_t prefixTokens() const;
  // Prefix tokens that have a position embedding (0 with noEmbedClass).
  int64_t embeddedPrefixTokens() const { return config_.noEmbedClass ? 0 : prefixTokens(); }
  // The position embedding for a `rows` x `cols` patch grid: pos_embed, resampled when the grid
  // differs from grid().
  torch::Tensor positionEmbedding(int64_t rows, int64_t cols) const;
  // The tokens after the final norm (N x T x D) for images N x 3 x H x W.
  torch::Tensor forwardFeatures(torch::Tensor x);
  // The final norm: norm (class-token pooling) or fc_norm (average pooling).
  torch::nn::LayerNorm& finalNorm() { return config_.avgPool ? fc_norm : norm; }

  torch::Tensor cls_token, reg_token, dist_token, pos_embed;
  VitPatchEmbed patch_embed{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr}, fc_norm{nullptr};
  torch::nn::Linear head{nullptr}, head_dist{nullptr};

 private:
  VitConfig config_;
  std::array<int64_t, 2> grid_{14, 14};
  double dropRate_ = 0;
};

}  // namespace fixres::models
