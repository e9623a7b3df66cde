// TensorGraphWriter: GraphWriter's operations as LibTorch tensor formulas (see the header).
#include "fixres/models/TensorGraphWriter.h"

#include <cmath>
#include <limits>

#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

// x W^T + b over the last axis.
torch::Tensor affine(const torch::Tensor& x, const torch::nn::LinearImpl& fc) {
  torch::Tensor y = torch::matmul(x, fc.weight.t());
  return fc.bias.defined() ? y + fc.bias : y;
}

}  // namespace

TensorGraphWriter::TensorGraphWriter(torch::Tensor input, bool fixedSize) : fixedSize_(fixedSize) {
  FIXRES_CHECK(input.dim() == 4 && input.size(1) == 3, InternalError,
               "TensorGraphWriter: the input must be N x 3 x H x W");
  values_["input"] = std::move(input);
}

const torch::Tensor& TensorGraphWriter::at(const Value& v) const {
  const auto it = values_.find(v);
  FIXRES_CHECK(it != values_.end(), InternalError, "graph value '", v, "' was never written");
  return it->second;
}

GraphWriter::Value TensorGraphWriter::put(torch::Tensor t) {
  Value name = "v" + std::to_string(next_++);
  values_[name] = std::move(t);
  return name;
}

GraphWriter::Value TensorGraphWriter::input() {
  return "input";
}

std::optional<std::pair<int64_t, int64_t>> TensorGraphWriter::spatialSize(const Value& x) const {
  const torch::Tensor& t = at(x);
  if (!fixedSize_ || t.dim() != 4) return std::nullopt;
  return std::make_pair(t.size(2), t.size(3));
}

GraphWriter::Value TensorGraphWriter::conv(const Value& x, const torch::nn::Conv2dImpl& c, Pads p) {
  const auto& o = c.options;
  // The module's own padding option is not used: the graph states every pad.
  const std::vector<int64_t> stride(o.stride()->begin(), o.stride()->end());
  const std::vector<int64_t> dilation(o.dilation()->begin(), o.dilation()->end());
  const std::vector<int64_t> none{0, 0};
  return put(at::conv2d(padTensor(at(x), p), c.weight, c.bias, torch::IntArrayRef(stride),
                        torch::IntArrayRef(none), torch::IntArrayRef(dilation), o.groups()));
}

GraphWriter::Value TensorGraphWriter::batchNorm(const Value& x, const BatchNorm2dImpl& bn) {
  const auto column = [](const torch::Tensor& t) { return t.reshape({1, -1, 1, 1}); };
  torch::Tensor y =
      (at(x) - column(bn.running_mean)) / torch::sqrt(column(bn.running_var) + bn.options.eps());
  if (bn.weight.defined()) y = y * column(bn.weight);
  if (bn.bias.defined()) y = y + column(bn.bias);
  return put(y);
}

GraphWriter::Value TensorGraphWriter::relu(const Value& x) {
  return put(torch::clamp_min(at(x), 0));
}

GraphWriter::Value TensorGraphWriter::sigmoid(const Value& x) {
  return put(1 / (1 + torch::exp(-at(x))));
}

GraphWriter::Value TensorGraphWriter::add(const Value& a, const Value& b) {
  return put(at(a) + at(b));
}

GraphWriter::Value TensorGraphWriter::mul(const Value& a, const Value& b) {
  return put(at(a) * at(b));
}

GraphWriter::Value TensorGraphWriter::maxPool(const Value& x, int64_t kernel, int64_t stride,
                                              Pads p) {
  const torch::Tensor in = padTensor(at(x), p, -std::numeric_limits<double>::infinity());
  return put(torch::max_pool2d(in, {kernel, kernel}, {stride, stride}));
}

GraphWriter::Value TensorGraphWriter::averagePool(const Value& x, int64_t k) {
  // Zeros to a multiple of k at the bottom and right; each window's sum over the count of its
  // pixels that are the image's.
  const torch::Tensor& v = at(x);
  const int64_t h = v.size(2), w = v.size(3), oh = (h + k - 1) / k, ow = (w + k - 1) / k;
  const Pads extra{0, 0, oh * k - h, ow * k - w};
  const auto windowSums = [&](const torch::Tensor& t) {
    return padTensor(t, extra).reshape({t.size(0), t.size(1), oh, k, ow, k}).sum({3, 5});
  };
  return put(windowSums(v) / windowSums(torch::ones({1, 1, h, w}, v.options())));
}

GraphWriter::Value TensorGraphWriter::subsample2(const Value& x) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  return put(at(x).index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)}));
}

GraphWriter::Value TensorGraphWriter::shiftUpLeft(const Value& x) {
  using torch::indexing::Slice;
  const torch::Tensor cut = at(x).index({Slice(), Slice(), Slice(1), Slice(1)});
  return put(padTensor(cut, Pads{0, 0, 1, 1}));
}

GraphWriter::Value TensorGraphWriter::concatChannels(const std::vector<Value>& values) {
  std::vector<torch::Tensor> parts;
  for (const auto& v : values) parts.push_back(at(v));
  return put(torch::cat(parts, 1));
}

GraphWriter::Value TensorGraphWriter::spatialMean(const Value& x) {
  return put(at(x).mean({2, 3}, /*keepdim=*/true));
}

GraphWriter::Value TensorGraphWriter::globalAveragePool(const Value& x) {
  return put(at(x).mean({2, 3}));
}

GraphWriter::Value TensorGraphWriter::linear(const Value& x, const torch::nn::LinearImpl& fc) {
  return put(affine(at(x), fc));
}

GraphWriter::Value TensorGraphWriter::flatten(const Value& x) {
  return put(at(x).reshape({at(x).size(0), -1}));
}

GraphWriter::Value TensorGraphWriter::addConstant(const Value& x, const torch::Tensor& c) {
  return put(at(x) + c);
}

GraphWriter::Value TensorGraphWriter::mulConstant(const Value& x, const torch::Tensor& c) {
  return put(at(x) * c);
}

GraphWriter::Value TensorGraphWriter::gelu(const Value& x) {
  const torch::Tensor& v = at(x);
  return put(v / 2 * (1 + torch::erf(v * M_SQRT1_2)));
}

GraphWriter::Value TensorGraphWriter::layerNorm(const Value& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps,
                                                bool channels) {
  const int64_t axis = channels ? 1 : -1;
  const torch::Tensor& v = at(x);
  const torch::Tensor centred = v - v.mean({axis}, /*keepdim=*/true);
  const torch::Tensor var = (centred * centred).mean({axis}, /*keepdim=*/true);
  const auto shape = [&](const torch::Tensor& t) { return channels ? t.reshape({-1, 1, 1}) : t; };
  return put(centred / torch::sqrt(var + eps) * shape(weight) + shape(bias));
}

GraphWriter::Value TensorGraphWriter::pointwiseLinear(const Value& x,
                                                      const torch::nn::LinearImpl& fc) {
  return put(affine(at(x).permute({0, 2, 3, 1}), fc).permute({0, 3, 1, 2}));
}

GraphWriter::Value TensorGraphWriter::patchTokens(const Value& x) {
  const torch::Tensor& v = at(x);
  return put(v.reshape({v.size(0), v.size(1), -1}).transpose(1, 2));
}

GraphWriter::Value TensorGraphWriter::prependTokens(const Value& tokens,
                                                    const torch::Tensor& prefix) {
  const torch::Tensor& t = at(tokens);
  return put(torch::cat({prefix.expand({t.size(0), -1, -1}), t}, 1));
}

GraphWriter::Value TensorGraphWriter::resampledPositions(const Value& grid,
                                                         const torch::Tensor& positions) {
  const torch::Tensor& g = at(grid);
  const int64_t h = g.size(2), w = g.size(3);
  // F.interpolate(positions, size=(h, w), mode="bicubic", antialias=True), in float32 as timm
  // resamples, then as tokens.
  const torch::Tensor r = at::_upsample_bicubic2d_aa(
      positions.to(at::kFloat), {h, w},
      /*align_corners=*/false, c10::optional<double>(), c10::optional<double>());
  return put(r.reshape({1, positions.size(1), h * w}).transpose(1, 2).to(g.dtype()));
}

GraphWriter::Value TensorGraphWriter::tokenLinear(const Value& x, const torch::nn::LinearImpl& fc) {
  return put(affine(at(x), fc));
}

GraphWriter::Value TensorGraphWriter::attention(const Value& x, const torch::nn::LinearImpl& qkv,
                                                const torch::nn::LinearImpl& proj, int64_t heads) {
  const torch::Tensor& v = at(x);
  const int64_t n = v.size(0), t = v.size(1), dim = proj.weight.size(0), d = dim / heads;
  // N x T x 3D -> 3 x N x H x T x d.
  const torch::Tensor parts = affine(v, qkv).reshape({n, t, 3, heads, d}).permute({2, 0, 3, 1, 4});
  const torch::Tensor q = parts[0] / std::sqrt(double(d));
  const torch::Tensor scores = torch::matmul(q, parts[1].transpose(-2, -1));
  const torch::Tensor e = torch::exp(scores - std::get<0>(scores.max(-1, /*keepdim=*/true)));
  const torch::Tensor mixed = torch::matmul(e / e.sum(-1, /*keepdim=*/true), parts[2]);
  return put(affine(mixed.transpose(1, 2).reshape({n, t, dim}), proj));
}

GraphWriter::Value TensorGraphWriter::token(const Value& x, int64_t index) {
  return put(at(x).select(1, index));
}

GraphWriter::Value TensorGraphWriter::meanTokens(const Value& x, int64_t from) {
  const torch::Tensor& v = at(x);
  return put(v.narrow(1, from, v.size(1) - from).mean(1));
}

void TensorGraphWriter::output(const Value& logits) {
  logits_ = at(logits);
}

}  // namespace fixres::models
