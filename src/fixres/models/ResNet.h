// ResNet / ResNeXt / Wide ResNet with torchvision's module layout, so parameter and buffer names
// and shapes equal torchvision's (conv1.weight, layer1.0.downsample.1.running_mean, fc.bias...).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <array>
#include <string>
#include <utility>

#include "fixres/models/BatchNorm.h"
#include "fixres/models/Model.h"

namespace fixres::models {

struct ResNetConfig {
  std::string name;                                  // registry name, for messages
  bool bottleneck = true;                            // Bottleneck (x4 expansion) or BasicBlock
  std::array<int64_t, 4> layers{3, 4, 6, 3};         // blocks per stage
  std::array<int64_t, 4> widths{64, 128, 256, 512};  // planes per stage (stem: widths[0])
  int64_t groups = 1;                                // ResNeXt cardinality
  int64_t widthPerGroup = 64;                        // ResNeXt / Wide ResNet bottleneck width
  int64_t numClasses = 1000;
  // Small-image stem: conv1 is 3x3 stride 1 and there is no max-pool (same names; conv1.weight
  // is 3x3). For 24-32 px inputs.
  bool smallStem = false;
  // > 0: timm's deep stem, conv1 = three 3x3 convolutions (stride 2, then 1) of stemWidth,
  // stemWidth and widths[0] channels with BatchNorm and ReLU between (conv1.0, conv1.1, conv1.3,
  // conv1.4, conv1.6), instead of one 7x7 (ResNet-D).
  int64_t stemWidth = 0;
  // Shortcuts that downsample average-pool first (2 x 2, ceil mode, padding not counted), then
  // project with a stride-1 1x1 convolution: downsample.1 the convolution, downsample.2 the
  // BatchNorm (timm's avg_down, ResNet-D).
  bool avgDown = false;
};

// The ResNet family (ResNetFamily.cpp): torchvision's ResNets, ResNeXts and Wide ResNets, FixRes's
// names for two of them and resnet_tiny; the FixRes paper's fine-tuning recipe.
const ArchitectureFamily& resnetFamily();

// The configuration of a ResNet-family name, aliases resolved to their canonical name. numClasses
// < 1 or a name of no ResNet -> UsageError.
ResNetConfig resnetConfig(const std::string& name, int64_t numClasses = 1000);

// One residual block; basic (conv1/bn1, conv2/bn2) or bottleneck (+ conv3/bn3), optional
// downsample (Sequential: 0 = 1x1 conv, 1 = BatchNorm; with `avgDown`, 0 = the average pool or
// an identity, 1 = the 1x1 conv, 2 = BatchNorm). Stride sits on the 3x3 conv (v1.5).
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride, int64_t groups,
            int64_t widthPerGroup, bool avgDown = false);
  torch::Tensor forward(
      torch::Tensor x);  // N x inplanes x H x W -> N x planes*expansion x H/s x W/s
  // forward() as a graph (GraphWriter.h).
  std::string writeGraph(GraphWriter& w, const std::string& x);
  static int64_t expansion(bool bottleneck) { return bottleneck ? 4 : 1; }
  // The BatchNorm ending the residual branch (bn3 or bn2).
  BatchNorm2d& lastBatchNorm() { return bottleneck_ ? bn3 : bn2; }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};

 private:
  bool bottleneck_;
  int64_t avgPool_ = 0;  // the shortcut's average pool (kernel = stride), 0: none
};
TORCH_MODULE(Block);

class ResNetImpl : public ModelImpl {
 public:
  explicit ResNetImpl(const ResNetConfig& config);

  // x: N x 3 x H x W float (any H, W >= 1 after the stem; NCHW or channels-last) -> N x C logits.
  torch::Tensor forward(torch::Tensor x) override;
  // {logits N x C, pooled embedding N x D} (D = embeddingDim(); the input of fc).
  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override;

  torch::nn::Linear& classifier() override { return fc; }
  std::string classifierPrefix() const override { return "fc."; }
  const ArchitectureFamily& family() const override { return resnetFamily(); }
  bool writeGraph(GraphWriter& writer) override;
  // The BatchNorm right before global pooling: the last block's bn3 (bottleneck) or bn2 (basic).
  BatchNorm2d& lastBatchNorm();
  int64_t embeddingDim() const override { return embeddingDim_; }

  torch::nn::Conv2d conv1{nullptr};         // null with a deep stem
  torch::nn::Sequential deepStem{nullptr};  // registered as conv1 (ResNetConfig::stemWidth)
  BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};

 private:
  torch::nn::Sequential makeLayer(int64_t planes, int64_t blocks, int64_t stride);

  ResNetConfig config_;
  int64_t inplanes_;
  int64_t embeddingDim_;
};
TORCH_MODULE(ResNet);

}  // namespace fixres::models
