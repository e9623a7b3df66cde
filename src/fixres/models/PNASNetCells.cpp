// PNASNet-5 cells and their parts (see PNASNetCells.h).
#include "fixres/models/PNASNetCells.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

namespace fixres::models {
namespace {

constexpr double kPnasBnEps = 1e-3;  // the TensorFlow model's, kept by timm
constexpr double kPnasBnMomentum = 0.1;

torch::nn::Conv2d pnasConv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                           int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k)
                               .stride(stride)
                               .padding(padding)
                               .groups(groups)
                               .bias(false));
}

BatchNorm2d pnasNorm(int64_t channels) {
  return BatchNorm2d(
      torch::nn::BatchNorm2dOptions(channels).eps(kPnasBnEps).momentum(kPnasBnMomentum));
}

// TensorFlow "same" padding at x's size (GraphWriter.h), filled with `value`.
torch::Tensor pnasPadSame(const torch::Tensor& x, int64_t k, int64_t stride, double value) {
  return padTensor(x, samePadsFor(x.size(2), x.size(3), k, stride), value);
}

// timm's 3 x 3 max pool with "same" padding: static padding 1 at stride 1 (PyTorch's max pool
// pads with -inf), padded per input with -inf when strided.
torch::Tensor pnasMaxPool(const torch::Tensor& x, int64_t stride) {
  if (stride == 1) return torch::max_pool2d(x, {3, 3}, {1, 1}, {1, 1});
  return torch::max_pool2d(pnasPadSame(x, 3, stride, -std::numeric_limits<double>::infinity()),
                           {3, 3}, {stride, stride});
}

// pnasMaxPool as a graph.
std::string pnasMaxPoolGraph(GraphWriter& w, const std::string& x, int64_t stride) {
  if (stride == 1) return w.maxPool(x, 3, 1, Pads::all(1));
  return w.maxPool(x, 3, stride, samePads(w, x, 3, stride, "pnasnet5large"));
}

}  // namespace

PNASNetSeparableImpl::PNASNetSeparableImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride)
    : kernel_(kernel), stride_(stride) {
  // Strided: padded per input in forward; stride 1: "same" is the static k / 2.
  const int64_t pad = stride > 1 ? 0 : kernel / 2;
  depthwise_conv2d = register_module("depthwise_conv2d", pnasConv(in, in, kernel, stride, pad, in));
  pointwise_conv2d = register_module("pointwise_conv2d", pnasConv(in, out, 1, 1, 0));
}

torch::Tensor PNASNetSeparableImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = stride_ > 1 ? pnasPadSame(x, kernel_, stride_, 0) : x;
  return pointwise_conv2d(depthwise_conv2d(y));
}

std::string PNASNetSeparableImpl::writeGraph(GraphWriter& w, const std::string& x) {
  const Pads p =
      stride_ > 1 ? samePads(w, x, kernel_, stride_, "pnasnet5large") : Pads::all(kernel_ / 2);
  return w.conv(w.conv(x, *depthwise_conv2d, p), *pointwise_conv2d, Pads{});
}

PNASNetBranchImpl::PNASNetBranchImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     bool stemCell) {
  const int64_t mid = stemCell ? out : in;
  separable_1 = register_module("separable_1", PNASNetSeparable(in, mid, kernel, stride));
  bn_sep_1 = register_module("bn_sep_1", pnasNorm(mid));
  separable_2 = register_module("separable_2", PNASNetSeparable(mid, out, kernel, 1));
  bn_sep_2 = register_module("bn_sep_2", pnasNorm(out));
}

torch::Tensor PNASNetBranchImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = bn_sep_1(separable_1(torch::relu(x)));
  return bn_sep_2(separable_2(torch::relu(y)));
}

std::string PNASNetBranchImpl::writeGraph(GraphWriter& w, const std::string& x) {
  const std::string y = w.batchNorm(separable_1->writeGraph(w, w.relu(x)), *bn_sep_1);
  return w.batchNorm(separable_2->writeGraph(w, w.relu(y)), *bn_sep_2);
}

PNASNetConvBnImpl::PNASNetConvBnImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     bool preAct, bool prePool)
    : stride_(stride), preAct_(preAct), prePool_(prePool) {
  // No padding: the stem's 3 x 3 convolution is unpadded, and "same" padding of a 1 x 1
  // convolution is zero at any stride.
  conv = register_module("conv", pnasConv(in, out, kernel, prePool ? 1 : stride, 0));
  bn = register_module("bn", pnasNorm(out));
}

torch::Tensor PNASNetConvBnImpl::forward(torch::Tensor x) {
  if (preAct_) x = torch::relu(x);
  if (prePool_) x = pnasMaxPool(x, stride_);
  return bn(conv(x));
}

std::string PNASNetConvBnImpl::writeGraph(GraphWriter& w, const std::string& in) {
  std::string x = preAct_ ? w.relu(in) : in;
  if (prePool_) x = pnasMaxPoolGraph(w, x, stride_);
  return w.batchNorm(w.conv(x, *conv, Pads{}), *bn);
}

PNASNetPathImpl::PNASNetPathImpl(int64_t in, int64_t out) {
  conv = register_module("conv", pnasConv(in, out, 1, 1, 0));
}

PNASNetFactorizedReductionImpl::PNASNetFactorizedReductionImpl(int64_t in, int64_t out) {
  path_1 = register_module("path_1", PNASNetPath(in, out / 2));
  path_2 = register_module("path_2", PNASNetPath(in, out / 2));
  final_path_bn = register_module("final_path_bn", pnasNorm(out));
}

torch::Tensor PNASNetFactorizedReductionImpl::forward(const torch::Tensor& x) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  const torch::Tensor a = torch::relu(x);
  // A 1 x 1 average pool of stride 2 is the even pixels, exactly.
  const auto even = [](const torch::Tensor& t) {
    return t.index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)});
  };
  // path_2 sees the input shifted up-left by one pixel, a zero row and column entering at the
  // bottom/right: the odd pixels, zero where they run off the edge.
  const torch::Tensor shifted = torch::constant_pad_nd(a, {-1, 1, -1, 1}, 0);
  torch::Tensor y = torch::cat({path_1->conv(even(a)), path_2->conv(even(shifted))}, 1);
  return final_path_bn(y);
}

std::string PNASNetFactorizedReductionImpl::writeGraph(GraphWriter& w, const std::string& x) {
  const std::string a = w.relu(x);
  const std::string p1 = w.conv(w.subsample2(a), *path_1->conv, Pads{});
  const std::string p2 = w.conv(w.subsample2(w.shiftUpLeft(a)), *path_2->conv, Pads{});
  return w.batchNorm(w.concatChannels({p1, p2}), *final_path_bn);
}

PNASNetCellImpl::PNASNetCellImpl(const PNASNetCellConfig& c)
    : stride_(c.stem || c.reduction ? 2 : 1) {
  const int64_t s = stride_;
  if (!c.stem) {
    if (c.matchPrevLayerDims)
      factorized_prev =
          register_module("conv_prev_1x1", PNASNetFactorizedReduction(c.inLeft, c.outLeft));
    else
      conv_prev_1x1 =
          register_module("conv_prev_1x1", PNASNetConvBn(c.inLeft, c.outLeft, 1, 1, true));
  }
  conv_1x1 = register_module("conv_1x1", PNASNetConvBn(c.inRight, c.outRight, 1, 1, true));
  // The stem's left input is not projected: its first and last branches take inLeft channels
  // (inRight for the last, the same tensor) and widen in their first separable convolution.
  if (c.stem) {
    comb_iter_0_left =
        register_module("comb_iter_0_left", PNASNetBranch(c.inLeft, c.outLeft, 5, s, true));
    comb_iter_0_right = register_module(
        "comb_iter_0_right", PNASNetConvBn(c.inLeft, c.outLeft, 1, s, false, /*prePool=*/true));
  } else {
    comb_iter_0_left =
        register_module("comb_iter_0_left", PNASNetBranch(c.outLeft, c.outLeft, 5, s, false));
  }
  comb_iter_1_left =
      register_module("comb_iter_1_left", PNASNetBranch(c.outRight, c.outRight, 7, s, false));
  comb_iter_2_left =
      register_module("comb_iter_2_left", PNASNetBranch(c.outRight, c.outRight, 5, s, false));
  comb_iter_2_right =
      register_module("comb_iter_2_right", PNASNetBranch(c.outRight, c.outRight, 3, s, false));
  comb_iter_3_left =
      register_module("comb_iter_3_left", PNASNetBranch(c.outRight, c.outRight, 3, 1, false));
  comb_iter_4_left = register_module("comb_iter_4_left",
                                     c.stem ? PNASNetBranch(c.inRight, c.outRight, 3, s, true)
                                            : PNASNetBranch(c.outLeft, c.outLeft, 3, s, false));
  if (c.stem || c.reduction)
    comb_iter_4_right =
        register_module("comb_iter_4_right", PNASNetConvBn(c.outRight, c.outRight, 1, s, true));
}

torch::Tensor PNASNetCellImpl::forward(const torch::Tensor& left, const torch::Tensor& right) {
  torch::Tensor l = left;
  if (factorized_prev)
    l = factorized_prev(left);
  else if (conv_prev_1x1)
    l = conv_prev_1x1(left);
  const torch::Tensor r = conv_1x1(right);

  torch::Tensor c0 =
      comb_iter_0_left(l) + (comb_iter_0_right ? comb_iter_0_right(l) : pnasMaxPool(l, stride_));
  torch::Tensor c1 = comb_iter_1_left(r) + pnasMaxPool(r, stride_);
  torch::Tensor c2 = comb_iter_2_left(r) + comb_iter_2_right(r);
  torch::Tensor c3 = comb_iter_3_left(c2) + pnasMaxPool(r, stride_);
  torch::Tensor c4 = comb_iter_4_left(l) + (comb_iter_4_right ? comb_iter_4_right(r) : r);
  return torch::cat({c0, c1, c2, c3, c4}, 1);
}

std::string PNASNetCellImpl::writeGraph(GraphWriter& w, const std::string& left,
                                        const std::string& right) {
  std::string l = left;
  if (factorized_prev)
    l = factorized_prev->writeGraph(w, left);
  else if (conv_prev_1x1)
    l = conv_prev_1x1->writeGraph(w, left);
  const std::string r = conv_1x1->writeGraph(w, right);
  const std::string c0 = w.add(
      comb_iter_0_left->writeGraph(w, l),
      comb_iter_0_right ? comb_iter_0_right->writeGraph(w, l) : pnasMaxPoolGraph(w, l, stride_));
  const std::string c1 = w.add(comb_iter_1_left->writeGraph(w, r), pnasMaxPoolGraph(w, r, stride_));
  const std::string c2 =
      w.add(comb_iter_2_left->writeGraph(w, r), comb_iter_2_right->writeGraph(w, r));
  const std::string c3 =
      w.add(comb_iter_3_left->writeGraph(w, c2), pnasMaxPoolGraph(w, r, stride_));
  const std::string c4 = w.add(comb_iter_4_left->writeGraph(w, l),
                               comb_iter_4_right ? comb_iter_4_right->writeGraph(w, r) : r);
  return w.concatChannels({c0, c1, c2, c3, c4});
}

}  // namespace fixres::models
