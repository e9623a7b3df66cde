// EfficientNet B0-B8 and L2 (Tan & Le 2019) with timm's module layout and state-dict names
// (conv_stem, bn1, blocks.S.B.{conv_pw, bn1, conv_dw, bn2, se.conv_reduce, se.conv_expand,
// conv_pwl, bn3}, conv_head, bn2, classifier), in timm's two variants:
//   tf_efficientnet_*: TensorFlow "same" padding (asymmetric for strided convolutions, computed
//                      from each input's size) and BatchNorm eps 1e-3, as the ported TF weights;
//   efficientnet_*:    symmetric padding, BatchNorm eps 1e-5 (PyTorch-trained weights).
// Weight files in torchvision's layout (features.*, classifier.1) load into efficientnet_b*
// (the family's foreign layout, EfficientNetFamily.cpp).
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <optional>
#include <string>
#include <vector>

#include "fixres/models/BatchNorm.h"
#include "fixres/models/Model.h"

namespace fixres::models {

struct EfficientNetConfig {
  std::string name;              // canonical name: tf_efficientnet_b3, efficientnet_b0, ...
  double widthMultiplier = 1;    // channel multiplier
  double depthMultiplier = 1;    // block-repeat multiplier (rounded up per stage)
  bool tfSame = false;           // TensorFlow "same" padding and BatchNorm eps 1e-3
  int defaultSize = 224;         // the resolution the published weights were trained at
  double defaultDropRate = 0.2;  // the paper's dropout before the classifier
  ModelOptions options;
};

// The EfficientNet family (EfficientNetFamily.cpp): the names below, timm's preprocessing, the
// reference's fine-tuning recipe, torchvision's layout of efficientnet_b* weight files.
const ArchitectureFamily& efficientNetFamily();

// The configuration of `name` when it names an EfficientNet: tf_efficientnet_b0 ... b8,
// tf_efficientnet_l2, efficientnet_b0 ... b7; timm's weight suffixes (_ap, _ns, _aa, ...) and tags
// (".ns_jft_in1k") name the same architecture. std::nullopt for other names.
std::optional<EfficientNetConfig> efficientNetConfig(const std::string& name);

// Squeeze-and-excitation: x * sigmoid(expand(silu(reduce(mean(x))))).
class SqueezeExciteImpl : public torch::nn::Module {
 public:
  SqueezeExciteImpl(int64_t channels, int64_t reduced);
  torch::Tensor forward(const torch::Tensor& x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph
  torch::nn::Conv2d conv_reduce{nullptr}, conv_expand{nullptr};
};
TORCH_MODULE(SqueezeExcite);

// One MBConv block: depthwise-separable (expansion 1: conv_dw, bn1, se, conv_pw, bn2) or
// inverted residual (conv_pw, bn1, conv_dw, bn2, se, conv_pwl, bn3); residual with drop path
// when the shape is kept.
class MBConvImpl : public torch::nn::Module {
 public:
  MBConvImpl(int64_t in, int64_t out, int64_t expansion, int64_t kernel, int64_t stride,
             bool tfSame, double bnEps, double dropPath);
  torch::Tensor forward(torch::Tensor x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph

  torch::nn::Conv2d conv_pw{nullptr}, conv_dw{nullptr}, conv_pwl{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  SqueezeExcite se{nullptr};

 private:
  bool inverted_;  // inverted residual (expansion > 1) or depthwise-separable
  bool skip_;
  bool samePad_;       // conv_dw pads "same" from each input's size
  int64_t staticPad_;  // conv_dw's own padding, every side
  double dropPath_;
};
TORCH_MODULE(MBConv);

class EfficientNetImpl : public ModelImpl {
 public:
  explicit EfficientNetImpl(const EfficientNetConfig& config);

  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override;
  int64_t embeddingDim() const override { return embeddingDim_; }
  const ArchitectureFamily& family() const override { return efficientNetFamily(); }
  torch::nn::Linear& classifier() override { return classifier_; }
  std::string classifierPrefix() const override { return "classifier."; }
  bool writeGraph(GraphWriter& writer) override;

  const EfficientNetConfig& config() const { return config_; }
  // Per stage: the expansion ratio of its blocks (1: depthwise-separable).
  const std::vector<int64_t>& stageExpansions() const { return stageExpansion_; }

  torch::nn::Conv2d conv_stem{nullptr}, conv_head{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::ModuleList blocks{nullptr};  // stages (Sequential) of MBConv blocks

 private:
  EfficientNetConfig config_;
  torch::nn::Linear classifier_{nullptr};
  std::vector<int64_t> stageExpansion_;  // per stage: expansion ratio (1: depthwise-separable)
  int64_t embeddingDim_ = 0;
  double dropRate_ = 0;
};

}  // namespace fixres::models
