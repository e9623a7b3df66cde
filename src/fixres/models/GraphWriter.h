// A model's inference graph described operation by operation, for exporters (engine/OnnxExport.h)
// that write it in another format: each family that supports export walks its modules in eval
// mode and calls these in order (ModelImpl::writeGraph). Values are named by the writer; the
// modules' tensors are read, never changed.
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <string>

#include "fixres/models/BatchNorm.h"

namespace fixres::models {

class GraphWriter {
 public:
  using Value = std::string;
  virtual ~GraphWriter() = default;
  // The image batch, N x 3 x H x W, normalised.
  virtual Value input() = 0;
  // The module's convolution (weights, bias when present, stride, dilation, groups) with
  // `padding` zeros on every side (the family knows its padding).
  virtual Value conv(const Value& x, const torch::nn::Conv2dImpl& conv, int64_t padding) = 0;
  // BatchNorm with its running statistics (eval mode).
  virtual Value batchNorm(const Value& x, const BatchNorm2dImpl& bn) = 0;
  virtual Value relu(const Value& x) = 0;
  virtual Value add(const Value& a, const Value& b) = 0;
  // Max pooling with symmetric zero-free padding (as torch's max_pool2d).
  virtual Value maxPool(const Value& x, int64_t kernel, int64_t stride, int64_t padding) = 0;
  // Global average pooling and flattening: N x C x H x W -> N x C.
  virtual Value globalAveragePool(const Value& x) = 0;
  virtual Value linear(const Value& x, const torch::nn::LinearImpl& fc) = 0;
  // The logits, N x classes.
  virtual void output(const Value& logits) = 0;
};

}  // namespace fixres::models
