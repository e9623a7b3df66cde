// A model's inference graph described operation by operation, for exporters (engine/OnnxExport.h)
// that write it in another format: each family that supports export walks its modules in eval
// mode and calls these in order (ModelImpl::writeGraph). Values are named by the writer; the
// modules' tensors are read, never changed.
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"

#include "fixres/models/BatchNorm.h"

namespace fixres::models {

// Zeros added before a convolution or pooling, per side.
struct Pads {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  static Pads all(int64_t p) { return {p, p, p, p}; }
};

class GraphWriter {
 public:
  using Value = std::string;
  virtual ~GraphWriter() = default;
  // The image batch, N x 3 x H x W, normalised.
  virtual Value input() = 0;
  // {height, width} of a value when the graph is written for a fixed input size; none when the
  // size is dynamic.
  virtual std::optional<std::pair<int64_t, int64_t>> spatialSize(const Value& x) const = 0;
  // The module's convolution (weights, bias when present, stride, dilation, groups) with `pads`
  // zeros around the input (the family knows its padding).
  virtual Value conv(const Value& x, const torch::nn::Conv2dImpl& conv, Pads pads) = 0;
  // BatchNorm with its running statistics (eval mode).
  virtual Value batchNorm(const Value& x, const BatchNorm2dImpl& bn) = 0;
  virtual Value relu(const Value& x) = 0;
  virtual Value sigmoid(const Value& x) = 0;
  virtual Value add(const Value& a, const Value& b) = 0;
  // Elementwise product, b broadcast over a (N x C x 1 x 1 over N x C x H x W).
  virtual Value mul(const Value& a, const Value& b) = 0;
  // x * sigmoid(x).
  Value silu(const Value& x) { return mul(x, sigmoid(x)); }
  // Max pooling with padding that never wins (as torch's max_pool2d, or -inf padding).
  virtual Value maxPool(const Value& x, int64_t kernel, int64_t stride, Pads pads) = 0;
  // Average pooling of k x k windows k apart (kernel = stride), as torch's avg_pool2d with
  // ceil_mode=True and count_include_pad=False: the windows cut by the bottom and right edges
  // average what they cover; output ceil(in / k).
  virtual Value averagePool(const Value& x, int64_t k) = 0;
  // Every second row and column from the first: x[:, :, ::2, ::2].
  virtual Value subsample2(const Value& x) = 0;
  // x moved up and left by one pixel, a zero row and column entering at the bottom and right.
  virtual Value shiftUpLeft(const Value& x) = 0;
  // The values one after the other along the channels.
  virtual Value concatChannels(const std::vector<Value>& values) = 0;
  // The mean over height and width, kept as N x C x 1 x 1.
  virtual Value spatialMean(const Value& x) = 0;
  // Global average pooling and flattening: N x C x H x W -> N x C.
  virtual Value globalAveragePool(const Value& x) = 0;
  virtual Value linear(const Value& x, const torch::nn::LinearImpl& fc) = 0;
  // N x C x 1 x 1 -> N x C.
  virtual Value flatten(const Value& x) = 0;
  // x + c and x * c, the constant broadcast numpy-style (a position embedding, a layer scale).
  virtual Value addConstant(const Value& x, const torch::Tensor& c) = 0;
  virtual Value mulConstant(const Value& x, const torch::Tensor& c) = 0;
  // GELU with erf: x / 2 * (1 + erf(x / sqrt(2))).
  virtual Value gelu(const Value& x) = 0;
  // LayerNorm with `weight` and `bias` over the last axis, or (`channels`) over axis 1 of
  // N x C x H x W.
  virtual Value layerNorm(const Value& x, const torch::Tensor& weight, const torch::Tensor& bias,
                          double eps, bool channels) = 0;
  // The Linear layer over axis 1 of N x C x H x W (a 1 x 1 convolution with its weights).
  virtual Value pointwiseLinear(const Value& x, const torch::nn::LinearImpl& fc) = 0;
  // Token sequences, N x T x D. A patch grid as tokens: N x D x h x w -> N x (h w) x D.
  virtual Value patchTokens(const Value& x) = 0;
  // `prefix` (1 x k x D, the same for every image) before the tokens: N x (k + T) x D.
  virtual Value prependTokens(const Value& tokens, const torch::Tensor& prefix) = 0;
  // A position embedding's patch rows laid out as `positions` (1 x D x H0 x W0) resampled to the
  // height and width of `grid` (N x D x h x w, known only when the graph runs), as timm's
  // resample_abs_pos_embed does (bicubic, antialiased, align_corners off): 1 x (h w) x D.
  virtual Value resampledPositions(const Value& grid, const torch::Tensor& positions) = 0;
  // The Linear layer over the last axis.
  virtual Value tokenLinear(const Value& x, const torch::nn::LinearImpl& fc) = 0;
  // Multi-head self-attention: qkv, `heads` heads of softmax(q k^T / sqrt(d)) v, proj.
  virtual Value attention(const Value& x, const torch::nn::LinearImpl& qkv,
                          const torch::nn::LinearImpl& proj, int64_t heads) = 0;
  // Token `index`: N x T x D -> N x D; the mean of the tokens from `from` on.
  virtual Value token(const Value& x, int64_t index) = 0;
  virtual Value meanTokens(const Value& x, int64_t from) = 0;
  // The logits, N x classes.
  virtual void output(const Value& logits) = 0;
};

// TensorFlow "same" padding of a k x k window of `stride` over height x width: output
// ceil(in / stride), the odd pixel on the bottom/right. The one formula of the TF-padded families
// (EfficientNet's tf_* variants and PNASNet), in forward() and in their graphs.
inline Pads samePadsFor(int64_t height, int64_t width, int64_t k, int64_t stride) {
  const auto pad = [&](int64_t in) {
    return std::max<int64_t>((((in + stride - 1) / stride) - 1) * stride + k - in, 0);
  };
  const int64_t ph = pad(height), pw = pad(width);
  return {ph / 2, pw / 2, ph - ph / 2, pw - pw / 2};
}

// N x C x H x W `x` with `pads` of `value` around its last two axes.
inline torch::Tensor padTensor(const torch::Tensor& x, Pads p, double value = 0) {
  if (p.top == 0 && p.left == 0 && p.bottom == 0 && p.right == 0) return x;
  return torch::constant_pad_nd(x, {p.left, p.right, p.top, p.bottom}, value);
}

// samePadsFor at x's size in a graph. UsageError naming `what` when the graph has no fixed size.
inline Pads samePads(const GraphWriter& w, const GraphWriter::Value& x, int64_t k, int64_t stride,
                     const std::string& what) {
  const auto size = w.spatialSize(x);
  FIXRES_CHECK(size.has_value(), UsageError, what,
               "'s TensorFlow \"same\" padding depends on the input size: export it at a fixed "
               "size (without --dynamic-size)");
  return samePadsFor(size->first, size->second, k, stride);
}

}  // namespace fixres::models
