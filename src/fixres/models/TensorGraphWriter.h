// A GraphWriter that evaluates the graph instead of writing it: each operation is computed at once
// on LibTorch tensors, by its definition in GraphWriter.h (the ONNX operator's formula), never by
// calling the module's forward. A family's writeGraph run through it gives the logits its graph
// describes, so the graph can be held to forward() in any build, with no ONNX library or runtime
// (tests/unit/models/GraphCheckTest.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "fixres/models/GraphWriter.h"

namespace fixres::models {

class TensorGraphWriter : public GraphWriter {
 public:
  // `input`: N x 3 x H x W. `fixedSize`: spatialSize() answers with each value's size (a graph
  // written for one input size); false: it answers none, as for an export with --dynamic-size.
  TensorGraphWriter(torch::Tensor input, bool fixedSize);

  // The logits the graph gave to output(); undefined before.
  const torch::Tensor& logits() const { return logits_; }
  // How many operations were evaluated.
  int64_t operations() const { return next_; }

  Value input() override;
  std::optional<std::pair<int64_t, int64_t>> spatialSize(const Value& x) const override;
  Value conv(const Value& x, const torch::nn::Conv2dImpl& conv, Pads pads) override;
  Value batchNorm(const Value& x, const BatchNorm2dImpl& bn) override;
  Value relu(const Value& x) override;
  Value sigmoid(const Value& x) override;
  Value add(const Value& a, const Value& b) override;
  Value mul(const Value& a, const Value& b) override;
  Value maxPool(const Value& x, int64_t kernel, int64_t stride, Pads pads) override;
  Value averagePool(const Value& x, int64_t k) override;
  Value subsample2(const Value& x) override;
  Value shiftUpLeft(const Value& x) override;
  Value concatChannels(const std::vector<Value>& values) override;
  Value spatialMean(const Value& x) override;
  Value globalAveragePool(const Value& x) override;
  Value linear(const Value& x, const torch::nn::LinearImpl& fc) override;
  Value flatten(const Value& x) override;
  Value addConstant(const Value& x, const torch::Tensor& c) override;
  Value mulConstant(const Value& x, const torch::Tensor& c) override;
  Value gelu(const Value& x) override;
  Value layerNorm(const Value& x, const torch::Tensor& weight, const torch::Tensor& bias,
                  double eps, bool channels) override;
  Value pointwiseLinear(const Value& x, const torch::nn::LinearImpl& fc) override;
  Value patchTokens(const Value& x) override;
  Value prependTokens(const Value& tokens, const torch::Tensor& prefix) override;
  Value resampledPositions(const Value& grid, const torch::Tensor& positions) override;
  Value tokenLinear(const Value& x, const torch::nn::LinearImpl& fc) override;
  Value attention(const Value& x, const torch::nn::LinearImpl& qkv,
                  const torch::nn::LinearImpl& proj, int64_t heads) override;
  Value token(const Value& x, int64_t index) override;
  Value meanTokens(const Value& x, int64_t from) override;
  void output(const Value& logits) override;

 private:
  const torch::Tensor& at(const Value& v) const;
  Value put(torch::Tensor t);

  std::map<Value, torch::Tensor> values_;
  bool fixedSize_;
  int64_t next_ = 0;
  torch::Tensor logits_;
};

}  // namespace fixres::models
