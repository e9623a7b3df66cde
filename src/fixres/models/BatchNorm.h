// BatchNorm2d with torch::nn::BatchNorm2d's options, parameters, buffers, names and forward,
// whose training-mode forward can be handed to an override: SyncBatchNorm
// (step/SyncBatchNorm.h) computes the statistics over the batches of every rank. Every model of
// fixres builds its BatchNorm layers from this class. (A class of its own rather than a subclass of
// LibTorch's: LibTorch does not export every member of its BatchNorm template.)
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/options/batchnorm.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <ostream>

namespace fixres::models {

class BatchNorm2dImpl;

// Computes a BatchNorm layer's training-mode output (and updates its running statistics) in
// place of torch's batch_norm.
class BatchNormOverride {
 public:
  virtual ~BatchNormOverride() = default;
  // input N x C x H x W -> same shape.
  virtual torch::Tensor forward(BatchNorm2dImpl& bn, const torch::Tensor& input) = 0;
};

class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t features)
      : BatchNorm2dImpl(torch::nn::BatchNorm2dOptions(features)) {}
  explicit BatchNorm2dImpl(const torch::nn::BatchNorm2dOptions& options);

  // Registers weight, bias (affine), running_mean, running_var, num_batches_tracked
  // (track_running_stats) in torch's order, then reset_parameters().
  void reset() override;
  void reset_running_stats();  // mean 0, var 1, count 0
  void reset_parameters();     // running stats reset, weight 1, bias 0
  void pretty_print(std::ostream& stream) const override;

  // input N x C x H x W. torch's forward (batch statistics in training mode or without running
  // statistics; momentum nullopt: cumulative average), or the override's in training mode.
  torch::Tensor forward(const torch::Tensor& input);
  void setTrainingOverride(std::shared_ptr<BatchNormOverride> override) {
    override_ = std::move(override);
  }

  torch::nn::BatchNorm2dOptions options;
  torch::Tensor weight, bias;                                    // C each (affine)
  torch::Tensor running_mean, running_var, num_batches_tracked;  // C, C, int64 scalar

 private:
  std::shared_ptr<BatchNormOverride> override_;
};
TORCH_MODULE(BatchNorm2d);

// Sets (null: clears) the training-mode override of every BatchNorm2d in `module`; returns how
// many layers it reached.
int setBatchNormOverride(torch::nn::Module& module, const std::shared_ptr<BatchNormOverride>& o);

}  // namespace fixres::models
