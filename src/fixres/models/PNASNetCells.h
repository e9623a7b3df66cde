// The building blocks of PNASNet-5 (Liu et al. 2018) in timm's module layout and state-dict
// names (Cadene's port of the TensorFlow model): separable branches, ReLU-conv-BN units, the
// factorized reduction and the cell that combines five branch pairs. Padding follows timm's
// pnasnet5large (pad_type "same"): stride-1 operations pad symmetrically (k / 2), strided ones
// pad TensorFlow-style from each input's size (the extra pixel on the right/bottom; -inf for
// max pooling). Every BatchNorm has eps 1e-3 and momentum 0.1.
// Tensors are N x C x H x W float, NCHW or channels-last.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <string>

#include "fixres/models/BatchNorm.h"
#include "fixres/models/GraphWriter.h"

namespace fixres::models {

// A depthwise k x k convolution (stride s) then a pointwise 1 x 1 one, no bias:
// depthwise_conv2d, pointwise_conv2d.
class PNASNetSeparableImpl : public torch::nn::Module {
 public:
  PNASNetSeparableImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph

  torch::nn::Conv2d depthwise_conv2d{nullptr}, pointwise_conv2d{nullptr};

 private:
  int64_t kernel_, stride_;
};
TORCH_MODULE(PNASNetSeparable);

// relu, separable_1 (stride s), bn_sep_1, relu, separable_2, bn_sep_2 (timm's BranchSeparables).
// The middle width is `out` in stem cells, `in` elsewhere.
class PNASNetBranchImpl : public torch::nn::Module {
 public:
  PNASNetBranchImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, bool stemCell);
  torch::Tensor forward(const torch::Tensor& x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph

  PNASNetSeparable separable_1{nullptr}, separable_2{nullptr};
  BatchNorm2d bn_sep_1{nullptr}, bn_sep_2{nullptr};
};
TORCH_MODULE(PNASNetBranch);

// [relu], conv (k x k, stride s, no padding, no bias), bn: timm's ActConvBn with `preAct`, the
// stem's conv_0 (3 x 3, stride 2, unpadded) without. With `prePool`, a 3 x 3 max pool of stride
// s ("same") comes first and the convolution has stride 1 (the stem's comb_iter_0_right).
class PNASNetConvBnImpl : public torch::nn::Module {
 public:
  PNASNetConvBnImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, bool preAct,
                    bool prePool = false);
  torch::Tensor forward(torch::Tensor x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph

  torch::nn::Conv2d conv{nullptr};
  BatchNorm2d bn{nullptr};

 private:
  int64_t stride_;
  bool preAct_, prePool_;
};
TORCH_MODULE(PNASNetConvBn);

// Holds one path of a factorized reduction: conv (1 x 1, no bias).
class PNASNetPathImpl : public torch::nn::Module {
 public:
  PNASNetPathImpl(int64_t in, int64_t out);
  torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(PNASNetPath);

// Halves the resolution of the previous-previous input: relu, then two 1 x 1 convolutions on
// the even pixels (path_1) and on the odd pixels shifted in with a zero border (path_2),
// concatenated, final_path_bn. Output ceil(H / 2) x ceil(W / 2), `out` channels.
class PNASNetFactorizedReductionImpl : public torch::nn::Module {
 public:
  PNASNetFactorizedReductionImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x);
  std::string writeGraph(GraphWriter& w, const std::string& x);  // forward() as a graph

  PNASNetPath path_1{nullptr}, path_2{nullptr};
  BatchNorm2d final_path_bn{nullptr};
};
TORCH_MODULE(PNASNetFactorizedReduction);

struct PNASNetCellConfig {
  int64_t inLeft, outLeft, inRight, outRight;  // channels of the two inputs, before and after
                                               // their 1 x 1 projections
  bool stem = false;       // cell_stem_0: one input, every branch but comb_iter_3_left strided
  bool reduction = false;  // stride 2 branches and pools
  bool matchPrevLayerDims = false;  // the left input has twice the resolution of the right
};

// One cell: left = conv_prev_1x1(previous-previous output) (the stem cell takes its input as
// it is), right = conv_1x1(previous output); five branch pairs comb_iter_0 ... comb_iter_4
// combine them by addition; output their concatenation, 2 x outLeft + 3 x outRight channels.
class PNASNetCellImpl : public torch::nn::Module {
 public:
  explicit PNASNetCellImpl(const PNASNetCellConfig& config);
  // left: the cell's previous-previous output (the stem cell: its only input); right: the
  // previous output (the stem cell: the same tensor as left).
  torch::Tensor forward(const torch::Tensor& left, const torch::Tensor& right);
  std::string writeGraph(GraphWriter& w, const std::string& left, const std::string& right);

  PNASNetFactorizedReduction factorized_prev{nullptr};  // registered as conv_prev_1x1
  PNASNetConvBn conv_prev_1x1{nullptr}, conv_1x1{nullptr};
  PNASNetBranch comb_iter_0_left{nullptr}, comb_iter_1_left{nullptr}, comb_iter_2_left{nullptr},
      comb_iter_2_right{nullptr}, comb_iter_3_left{nullptr}, comb_iter_4_left{nullptr};
  PNASNetConvBn comb_iter_0_right{nullptr};  // stem cell only (max pool, conv, bn)
  PNASNetConvBn comb_iter_4_right{nullptr};  // stem and reduction cells; identity elsewhere

 private:
  int64_t stride_;
};
TORCH_MODULE(PNASNetCell);

}  // namespace fixres::models
