// One optimizer step of data-parallel training: forward, loss, backward, gradient all-reduce,
// SGD. Shared by the Trainer and `fixres bench train` so the benchmark measures the real step.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/FinetuneRecipe.h"
#include "fixres/engine/Precision.h"
#include "fixres/models/ResNet.h"

namespace fixres::engine {

struct StepOptions {
  double learningRate = 0.1;
  double momentum = 0.9;
  double weightDecay = 1e-4;
  bool nesterov = false;
  double labelSmoothing = 0;
  bool finetune = false;  // the FixRes recipe of the model's family (FinetuneRecipe.h)
  bool finetuneBnAffine = false;
  Precision precision = Precision::kFp32;  // bf16: forward and loss under autocast
};

class TrainStep {
 public:
  // Freezes parameters for finetune, broadcasts rank 0's weights, builds optimizer and reducer.
  TrainStep(models::ResNet model, StepOptions options, distributed::Communicator& comm);

  // Train mode (or, for finetune, eval mode but for the recipe's train-mode modules).
  void setTrainingMode();
  // images N x 3 x H x W on the model's device, labels int64 N. Returns the loss.
  double step(const torch::Tensor& images, const torch::Tensor& labels, double lr);

  // The same step in parts, for gradient accumulation over micro-batches: begin() clears the
  // gradients (and takes rank 0's BN statistics, as DDP's broadcast_buffers), each backward() adds
  // the gradient of lossScale x loss of one micro-batch and returns its unscaled loss, finish()
  // all-reduces the gradients and applies SGD with the given learning rate.
  void begin();
  double backward(const torch::Tensor& images, const torch::Tensor& labels, double lossScale);
  void finish(double lr);

  torch::optim::SGD& optimizer() { return *optimizer_; }
  std::vector<torch::Tensor> trainableParameters() const;

 private:
  models::ResNet model_;
  StepOptions o_;
  distributed::Communicator& comm_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<distributed::GradReducer> reducer_;
  FinetuneRecipe recipe_;  // finetune only
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Tensor> params_;  // the trainable ones
};

}  // namespace fixres::engine
