// One optimizer step of data-parallel training: forward, loss, backward, gradient all-reduce,
// SGD. Shared by the Trainer and `fixres bench train` so the benchmark measures the real step.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/FinetuneRecipe.h"
#include "fixres/engine/Precision.h"
#include "fixres/models/Model.h"

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
  TrainStep(models::Model model, StepOptions options, distributed::Communicator& comm);

  // Train mode (or, for finetune, eval mode but for the recipe's train-mode modules).
  void setTrainingMode();
  // images N x 3 x H x W on the model's device; labels int64 N, or soft targets float N x C
  // (mixup / CutMix: class probabilities, each row summing to 1). Returns the loss.
  double step(const torch::Tensor& images, const torch::Tensor& labels, double lr);

  // The same step in parts, for gradient accumulation over micro-batches: begin() clears the
  // gradients (and takes rank 0's BN statistics, as DDP's broadcast_buffers) and keeps a copy of
  // the buffers, each backward() adds the gradient of lossScale x loss of one micro-batch and
  // returns its unscaled loss, finish() all-reduces the gradients and applies SGD with the given
  // learning rate.
  //
  // finish() applies the step only when every rank's loss (`lossFinite` on this one) and the
  // averaged gradients are finite, and returns whether it did; otherwise every rank alike drops
  // the step (rollBack()). A rank whose loss is not finite makes its gradient NaN, so the
  // all-reduce carries the verdict to every rank without another collective.
  // The loss of backward(): cross-entropy with --label-smoothing, for class indices or class
  // probabilities alike, as torch.nn.functional.cross_entropy (with probabilities, smoothing
  // takes targets x (1 - ls) + ls / C).
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets,
                            double labelSmoothing);

  void begin();
  double backward(const torch::Tensor& images, const torch::Tensor& labels, double lossScale);
  bool finish(double lr, bool lossFinite = true);

  // Top-1 hits of the training batches seen by backward() since the last call (argmax of the
  // logits against hard int64 labels; batches with other targets are not counted), kept on the
  // model's device so that counting adds no synchronisation to a step. Resets the counts.
  struct Top1Hits {
    int64_t correct = 0, count = 0;
  };
  Top1Hits takeTop1Hits();

  // Undoes a begun step that was not applied: the buffers as begin() found them (a forward pass
  // in train mode updates the BN statistics). Returns false when a failure interrupted SGD itself
  // (the weights are half updated: nothing of this state may be saved); true otherwise.
  bool rollBack();
  // Whether every parameter, buffer and momentum buffer is finite.
  bool stateFinite();

  torch::optim::SGD& optimizer() { return *optimizer_; }
  std::vector<torch::Tensor> trainableParameters() const;

 private:
  models::Model model_;
  StepOptions o_;
  distributed::Communicator& comm_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<distributed::GradReducer> reducer_;
  FinetuneRecipe recipe_;  // finetune only
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Tensor> params_;  // the trainable ones
  torch::Tensor top1Correct_;          // int64 scalar on the model's device (undefined: none yet)
  int64_t top1Count_ = 0;
  // Buffers of one dtype and device, copied at begin() into one flat tensor (a few copies per
  // step rather than one per buffer).
  struct BufferGroup {
    std::vector<size_t> members;  // indices into buffers_
    torch::Tensor saved;
  };
  std::vector<BufferGroup> bufferGroups_;
  enum class Phase { kIdle, kBegun, kApplying } phase_ = Phase::kIdle;
};

}  // namespace fixres::engine
