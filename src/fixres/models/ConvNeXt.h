// ConvNeXt (Liu et al. 2022) with timm's module layout and state-dict names: stem.0 (4 x 4
// patch convolution), stem.1 (LayerNorm over channels), stages.S.downsample.{0 norm, 1 conv},
// stages.S.blocks.B.{conv_dw, norm, mlp.fc1, mlp.fc2, gamma}, head.norm, head.fc. Both of timm's
// block forms: conv_mlp (the small models, convnext_atto ... nano: LayerNorm over channels and
// 1 x 1 convolutions) and the channels-last form (tiny and up: LayerNorm and Linear layers).
// No BatchNorm: FixRes's "last BatchNorm" is the head's LayerNorm (ConvNeXtFamily.cpp).
#pragma once

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <array>
#include <optional>
#include <string>

#include "fixres/models/Model.h"

namespace fixres::models {

struct ConvNeXtConfig {
  std::string name;  // canonical name: convnext_tiny, convnext_nano, ...
  std::array<int64_t, 4> depths{3, 3, 9, 3};
  std::array<int64_t, 4> dims{96, 192, 384, 768};
  bool convMlp = false;   // LayerNorm over NCHW channels and 1 x 1 convolutions in the blocks
  int64_t stemPatch = 4;  // the stem's patch size (timm's patch_size)
  int defaultSize = 224;
  double defaultDropPath = 0.1;  // the paper's ImageNet-1k rate for tiny (timm's default is 0)
  ModelOptions options;
};

// The ConvNeXt family (ConvNeXtFamily.cpp).
const ArchitectureFamily& convNeXtFamily();

// The configuration of `name` when it names a ConvNeXt; std::nullopt for other names.
std::optional<ConvNeXtConfig> convNeXtConfig(const std::string& name);

// timm's LayerNorm2d: LayerNorm over the channels of an N x C x H x W tensor (eps 1e-6).
class LayerNorm2dImpl : public torch::nn::Module {
 public:
  explicit LayerNorm2dImpl(int64_t channels, double eps = 1e-6);
  torch::Tensor forward(const torch::Tensor& x);
  double eps() const { return eps_; }
  torch::Tensor weight, bias;

 private:
  double eps_;
};
TORCH_MODULE(LayerNorm2d);

// The block's MLP: fc1 -> GELU -> fc2, as 1 x 1 convolutions (conv_mlp) or Linear layers on
// channels-last tokens.
class ConvNeXtMlpImpl : public torch::nn::Module {
 public:
  ConvNeXtMlpImpl(int64_t dim, int64_t hidden, bool conv);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d fc1Conv{nullptr}, fc2Conv{nullptr};  // conv_mlp (named fc1, fc2)
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};          // channels-last form
};
TORCH_MODULE(ConvNeXtMlp);

// One block: x + drop_path(gamma * mlp(norm(conv_dw(x)))).
class ConvNeXtBlockImpl : public torch::nn::Module {
 public:
  ConvNeXtBlockImpl(int64_t dim, bool convMlp, double dropPath);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d conv_dw{nullptr};
  LayerNorm2d norm2d{nullptr};             // conv_mlp: "norm" over NCHW channels
  torch::nn::LayerNorm normLast{nullptr};  // channels-last form: "norm"
  ConvNeXtMlp mlp{nullptr};
  torch::Tensor gamma;
  bool convMlp() const { return convMlp_; }

 private:
  bool convMlp_;
  double dropPath_;
};
TORCH_MODULE(ConvNeXtBlock);

class ConvNeXtImpl : public ModelImpl {
 public:
  explicit ConvNeXtImpl(const ConvNeXtConfig& config);

  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override;
  int64_t embeddingDim() const override { return config_.dims[3]; }
  const ArchitectureFamily& family() const override { return convNeXtFamily(); }
  torch::nn::Linear& classifier() override { return headFc; }
  std::string classifierPrefix() const override { return "head.fc."; }
  bool writeGraph(GraphWriter& writer) override;

  const ConvNeXtConfig& config() const { return config_; }

  torch::nn::Sequential stem{nullptr};    // 0: conv, 1: LayerNorm2d
  torch::nn::ModuleList stages{nullptr};  // each a Module with downsample and blocks
  LayerNorm2d headNorm{nullptr};
  torch::nn::Linear headFc{nullptr};

 private:
  ConvNeXtConfig config_;
  double dropRate_ = 0;
};

}  // namespace fixres::models
