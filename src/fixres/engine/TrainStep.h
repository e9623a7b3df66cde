// One optimizer step of data-parallel training: forward, loss, backward, gradient all-reduce,
// (loss unscaling, clipping) and the optimizer's update. Shared by the Trainer and `fixres bench
// train` so the benchmark measures the real step.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <optional>

#include "fixres/common/Setting.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/FinetuneRecipe.h"
#include "fixres/engine/LossScaler.h"
#include "fixres/engine/MultiTensorStep.h"
#include "fixres/engine/Optimizer.h"
#include "fixres/engine/Precision.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

// What finish() did with a step.
enum class StepResult {
  kApplied,    // the optimizer updated the weights
  kNotFinite,  // a rank's loss, or (without loss scaling) the averaged gradient, is not finite
  kOverflow,   // loss scaling: the unscaled gradient is not finite; step skipped, scale lowered
};

struct StepOptions {
  double learningRate = 0.1;  // the rate applied (a run's is --learning-rate scaled)
  double momentum = 0.9;
  double weightDecay = 1e-4;
  bool nesterov = false;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  OptimizerImpl optimizerImpl = OptimizerImpl::kAuto;  // MultiTensorStep.h
  std::optional<double> normWeightDecay;               // nullopt: weightDecay (OptimizerOptions)
  std::optional<double> biasWeightDecay;  // nullopt: as the other parameters of their layer
  double clipGradNorm = 0;                // > 0: clip the gradients' total 2-norm to this
  // Dynamic loss scaling (what --precision fp16 uses; usable with any precision here).
  std::optional<LossScalerOptions> lossScaling;
  double labelSmoothing = 0;
  bool finetune = false;  // the FixRes recipe of the model's family (FinetuneRecipe.h)
  bool finetuneBnAffine = false;
  models::FinetuneScope finetuneScope = models::FinetuneScope::kRecipe;
  double layerDecay = 0.75;  // --finetune-scope all: learning-rate multiplier per layer
  Precision precision = Precision::kFp32;  // bf16: forward and loss under autocast
  // Data-parallel gradients: bucket sizes and the precision they travel in.
  distributed::ReducerOptions reducer;
  // BatchNorm layers in training mode normalise over the global batch (SyncBatchNorm.h).
  bool syncBatchNorm = false;

  // The settings of a run's step (learningRate, finetune and precision follow from others).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    const char* const g = "Optimisation";
    v(Setting{"opt",
              "--opt",
              g,
              "Optimizer (the torchvision references'): sgd, adamw (default betas and eps) or "
              "rmsprop (eps 0.0316, alpha 0.9)",
              {},
              SettingRole::kDefinesRun},
      o.optimizer, optimizerKinds());
    v(Setting{"optimizer_impl",
              "--optimizer-impl",
              g,
              "How the optimizer updates the weights: auto (fused where the build has the "
              "kernel: LibTorch 2.x's SGD and AdamW; else foreach), fused, foreach (multi-tensor "
              "kernels, torch.optim's foreach=True), loop (parameter by parameter, LibTorch's own "
              "step)",
              {}},
      o.optimizerImpl, optimizerImpls());
    v(Setting{"momentum", "--momentum", g, "Momentum of sgd and rmsprop",
              Range::reals(0, 1, false, /*hiOpen=*/true)},
      o.momentum);
    v(Setting{"weight_decay", "--weight-decay", g, "Weight decay", Range::reals(0)}, o.weightDecay);
    v(Setting{"norm_weight_decay", "--norm-weight-decay", g,
              "Weight decay of the norm layers' parameters (BatchNorm, GroupNorm, LayerNorm, ...) "
              "(default: --weight-decay)",
              Range::reals(0)},
      o.normWeightDecay);
    v(Setting{"bias_weight_decay", "--bias-weight-decay", g,
              "Weight decay of every parameter named bias (norm layers' too) (default: that of "
              "its layer)",
              Range::reals(0)},
      o.biasWeightDecay);
    v(Setting{"nesterov", "--nesterov", g, "Nesterov momentum (--opt sgd)"}, o.nesterov);
    v(Setting{"clip_grad_norm", "--clip-grad-norm", g,
              "Clip the gradients' total 2-norm to this (after the all-reduce and loss "
              "unscaling) (0: no clipping)",
              Range::reals(0)},
      o.clipGradNorm);
    v(Setting{"label_smoothing", "--label-smoothing", g, "Label smoothing",
              Range::reals(0, 1, false, /*hiOpen=*/true)},
      o.labelSmoothing);
    v(Setting{"finetune_bn_affine",
              "--finetune-bn-affine",
              g,
              "Also train the last BatchNorm's weight and bias (paper variant)",
              {},
              SettingRole::kCompared,
              "finetune"},
      o.finetuneBnAffine);
    v(Setting{"finetune_scope",
              "--finetune-scope",
              g,
              "What learns when fine-tuning at the test resolution: recipe (the family's FixRes "
              "recipe: CNNs the classifier and last BatchNorm, ViTs head-pos, ConvNeXts head), "
              "head (classifier and the norm before it), head-pos (also a ViT's position "
              "embedding), all (every parameter, the learning rate decaying per layer by "
              "--layer-decay)",
              {},
              SettingRole::kCompared,
              "finetune"},
      o.finetuneScope, finetuneScopes());
    v(Setting{"layer_decay", "--layer-decay", g,
              "With --finetune-scope all: each layer below the head learns at this times the "
              "rate of the layer above it",
              Range::reals(0, 1, /*loOpen=*/true), SettingRole::kCompared, "finetune"},
      o.layerDecay);
    v(Setting{"sync_bn", "--sync-bn", "Cluster",
              "BatchNorm statistics over the global batch (every rank's images), as PyTorch's "
              "SyncBatchNorm; without it each rank normalises with its own batch and rank 0's "
              "running statistics are kept"},
      o.syncBatchNorm);
    distributed::ReducerOptions::visitSettings(o.reducer, v);
  }
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
  // The StepResult of the last finish() (or step()).
  StepResult lastResult() const { return lastResult_; }
  // With clipGradNorm: the total 2-norm of the (averaged, unscaled) gradients of the last applied
  // step, before clipping (what torch.nn.utils.clip_grad_norm_ returns); NaN otherwise.
  double lastGradNorm() const { return lastGradNorm_; }

  // The same step in parts, for gradient accumulation over micro-batches: begin(n) clears the
  // gradients (and takes rank 0's BN statistics, as DDP's broadcast_buffers) and keeps a copy of
  // the buffers, each of the n backward() calls adds the gradient of lossScale x loss of one
  // micro-batch and returns its unscaled loss (the last one's backward pass also all-reduces the
  // gradients, bucket by bucket as they become ready: distributed::GradReducer), finish() waits
  // for the all-reduce, unscales the gradients (loss scaling), clips their norm (clipGradNorm)
  // and applies the optimizer with the given learning rate.
  //
  // finish() applies the step only when every rank's losses (and `lossFinite` on this one) and the
  // averaged gradients are finite; otherwise every rank alike drops the step (rollBack()). A rank
  // whose loss is not finite says so in a slot of the gradient all-reduce, so every rank knows
  // without another collective. With loss scaling, gradients that are not finite once unscaled
  // skip the step (kOverflow) and update the scale.
  // The loss of backward(): cross-entropy with --label-smoothing, for class indices or class
  // probabilities alike, as torch.nn.functional.cross_entropy (with probabilities, smoothing
  // takes targets x (1 - ls) + ls / C).
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets,
                            double labelSmoothing);

  void begin(int microBatches = 1);
  // `lossScale` weighs the micro-batch (1 / micro-batches); the loss scaler's scale multiplies it.
  double backward(const torch::Tensor& images, const torch::Tensor& labels, double lossScale);
  StepResult finish(double lr, bool lossFinite = true);

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
  // Whether every parameter, buffer and optimizer state tensor is finite.
  bool stateFinite();

  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  OptimizerKind optimizerKind() const { return o_.optimizer; }
  LossScaler* lossScaler() { return scaler_ ? &*scaler_ : nullptr; }  // null without loss scaling
  std::vector<torch::Tensor> trainableParameters() const;

 private:
  StepResult finishStep(double lr, bool lossFinite);

  models::Model model_;
  StepOptions o_;
  distributed::Communicator& comm_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<LossScaler> scaler_;
  std::unique_ptr<distributed::GradReducer> reducer_;
  FinetuneRecipe recipe_;            // finetune only
  std::vector<double> groupScales_;  // the optimizer's groups' learning-rate multipliers
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
  int microBatches_ = 1;  // backward() calls in this step (the last one launches the all-reduce)
  int backwards_ = 0;     // backward() calls so far in this step
  StepResult lastResult_ = StepResult::kApplied;
  double lastGradNorm_ = NAN;
};

}  // namespace fixres::engine
