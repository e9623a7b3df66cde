// One optimizer step of data-parallel training: forward, loss, backward, gradient all-reduce,
// (loss unscaling, clipping) and the optimizer's update. Shared by the Trainer and `fixres bench
// train` so the benchmark measures the real step.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fixres/common/Setting.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/models/Model.h"
#include "fixres/optim/MultiTensorStep.h"
#include "fixres/optim/Optimizer.h"
#include "fixres/runtime/Precision.h"
#include "fixres/step/FinetuneRecipe.h"
#include "fixres/step/LossScaler.h"
#include "fixres/step/StepGraph.h"
#include "fixres/step/StepTally.h"

namespace fixres::engine {

// What finish() did with a step.
enum class StepResult {
  kApplied,    // the optimizer updated the weights
  kNotFinite,  // a rank's loss, or (without loss scaling) the averaged gradient, is not finite
  kOverflow,   // loss scaling: the unscaled gradient is not finite; step skipped, scale lowered
  kPending,    // decided on the device (skipped there when not finite): see takeWindow()
};

// Where a step that is not finite is skipped.
enum class SkipOn {
  kAuto,    // the device on a GPU with a fused optimizer and no loss scaling, else the host
  kHost,    // the host reads the flag every step (free on the CPU) and does not apply the step
  kDevice,  // the fused optimizer kernel skips (found_inf); nothing read back until takeWindow()
};

const ChoiceTable<SkipOn>& skipOnChoices();  // auto, host, device

// Rows other commands bind too, by these names (cli/Flags.h: bindSetting).
inline constexpr Setting kSyncBnRow{
    "sync_bn", "--sync-bn", "Cluster",
    "BatchNorm statistics over the global batch (every rank's images), as PyTorch's "
    "SyncBatchNorm; without it each rank normalises with its own batch and rank 0's "
    "running statistics are kept"};
inline constexpr Setting kSkipOnRow{
    "skip_on",
    "--skip-on",
    "Optimisation",
    "Where a step whose loss or gradient is not finite is dropped: host (the check is "
    "read back every step), device (the fused optimizer kernel skips it, as "
    "torch.optim's found_inf; the checks are read every --log-every steps), auto "
    "(device on a GPU with a fused optimizer and no fp16 loss scaling, else host)",
    {}};
inline constexpr Setting kOptimizerImplRow{
    "optimizer_impl",
    "--optimizer-impl",
    "Optimisation",
    "How the optimizer updates the weights: auto (fused where the build has the "
    "kernel: LibTorch 2.x's SGD and AdamW; else foreach where the optimizer has it: sgd, "
    "adamw, rmsprop; else loop), fused, foreach (multi-tensor kernels, torch.optim's "
    "foreach=True), loop (parameter by parameter)",
    {}};
inline const Setting kOptRow{
    "opt", "--opt", "Optimisation", optim::optimizersHelp(), {}, SettingRole::kDefinesRun};
inline constexpr Setting kCudaGraphRow{
    "cuda_graph",
    "--cuda-graph",
    "Optimisation",
    "Capture the training step as a CUDA graph per input size and replay it: auto (on "
    "a GPU when the step allows it: one rank, SGD's fused kernel, the check on the "
    "device, no fp16 scaling, --sync-bn or accumulation; else eager, the reason "
    "logged), on (or fail naming the reason), off",
    {}};

struct StepOptions {
  double learningRate = 0.1;  // the rate applied (a run's is --learning-rate scaled)
  double momentum = 0.9;
  double weightDecay = 1e-4;
  bool nesterov = false;
  optim::OptimizerKind optimizer = optim::optimizerNamed("sgd");
  optim::OptimizerImpl optimizerImpl = optim::OptimizerImpl::kAuto;  // MultiTensorStep.h
  std::optional<double> normWeightDecay;  // nullopt: weightDecay (optim::OptimizerOptions)
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
  SkipOn skipOn = SkipOn::kAuto;
  GraphMode cudaGraph = GraphMode::kAuto;
  // The optimizers' own settings by key (LARS's trust coefficient, LAMB's betas: their
  // descriptors' rows, optim/OptimizerDescriptor.h), every key present.
  std::map<std::string, double> optimizerParams = optim::optimizerParamDefaults();
  // Not settings: StepTally's halting rule (--nan-policy stop: 0; skip: 10), and the run's
  // micro-batches per step (--accumulation-steps: a captured step holds one).
  int64_t maxSkippedInARow = 0;
  int accumulationSteps = 1;

  // The settings of a run's step (learningRate, finetune and precision follow from others).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    const char* const g = "Optimisation";
    v(kOptRow, o.optimizer, optim::optimizerKinds());
    v(kOptimizerImplRow, o.optimizerImpl, optim::optimizerImpls());
    optim::visitOptimizerParams(o.optimizerParams, v);
    v(kSkipOnRow, o.skipOn, skipOnChoices());
    v(kCudaGraphRow, o.cudaGraph, graphModes());
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
              "What learns when fine-tuning at the test resolution: recipe (the architecture's "
              "FixRes recipe, docs/models.md), head (classifier and the norm before it), "
              "head-pos (also the position embedding), all (every parameter, the learning rate "
              "decaying per layer by --layer-decay)",
              {},
              SettingRole::kCompared,
              "finetune"},
      o.finetuneScope, finetuneScopes());
    v(Setting{"layer_decay", "--layer-decay", g,
              "With --finetune-scope all: each layer below the head learns at this times the "
              "rate of the layer above it",
              Range::reals(0, 1, /*loOpen=*/true), SettingRole::kCompared, "finetune"},
      o.layerDecay);
    v(kSyncBnRow, o.syncBatchNorm);
    distributed::ReducerOptions::visitSettings(o.reducer, v);
  }
};

class StepGraphs;

class TrainStep {
 public:
  // Freezes parameters for finetune, broadcasts rank 0's weights, builds optimizer and reducer.
  TrainStep(models::Model model, StepOptions options, distributed::Communicator& comm);
  ~TrainStep();

  // Train mode (or, for finetune, eval mode but for the recipe's train-mode modules).
  void setTrainingMode();
  // images N x 3 x H x W on the model's device; labels int64 N, or soft targets float N x C
  // (mixup / CutMix: class probabilities, each row summing to 1). Returns the loss (read back).
  double step(const torch::Tensor& images, const torch::Tensor& labels, double lr);
  // One step of one micro-batch as step() without reading anything back: replayed from a CUDA
  // graph when --cuda-graph captured the step (StepGraph.h), else begin/backward/finish.
  StepResult stepAsync(const torch::Tensor& images, const torch::Tensor& labels, double lr);
  // StepGraphs only: warm-up steps (skipped on the device, not counted), and the learning rate
  // a captured step reads (float32 0-dim on the device).
  void setWarmingUp(bool on) { warmingUp_ = on; }
  torch::Tensor& graphLearningRate() { return graphLr_; }
  // Whether stepAsync() replays graphs, and why not when it does not ("" when it does).
  bool capturesSteps() const { return graphs_ != nullptr; }
  const std::string& whyNotCaptured() const { return whyNotCaptured_; }
  // The StepResult of the last finish() (or step()).
  StepResult lastResult() const { return lastResult_; }
  // With clipGradNorm: the total 2-norm of the (averaged, unscaled) gradients of the last applied
  // step, before clipping (what torch.nn.utils.clip_grad_norm_ returns); NaN otherwise. Read back.
  double lastGradNorm() const;
  // Whether a step that is not finite is skipped by the optimizer kernel (SkipOn::kDevice).
  bool skipsOnDevice() const { return deviceSkip_; }
  int64_t maxSkippedInARow() const { return o_.maxSkippedInARow; }

  // The same step in parts, for gradient accumulation over micro-batches: begin(n) clears the
  // gradients (and takes rank 0's BN statistics, as DDP's broadcast_buffers) and keeps a copy of
  // the buffers, each of the n backward() calls adds the gradient of lossScale x loss of one
  // micro-batch and returns its unscaled loss (the last one's backward pass also all-reduces the
  // gradients, bucket by bucket as they become ready: distributed::GradReducer), finish() waits
  // for the all-reduce, unscales the gradients (loss scaling), clips their norm (clipGradNorm)
  // and applies the optimizer with the given learning rate.
  //
  // finish() applies the step only when every rank's losses (and `lossFinite` on this one) and the
  // averaged gradients are finite, and the run has not halted (StepTally); otherwise every rank
  // alike drops the step: on the host (rollBack(), kNotFinite) or, skipping on the device, by the
  // fused kernel's found_inf and a device-side restore of the buffers (kPending). A rank whose loss
  // is not finite says so in a slot of the gradient all-reduce, so every rank knows without
  // another collective. With loss scaling, gradients that are not finite once unscaled skip the
  // step (kOverflow) and update the scale. Each step is counted in the tally that takeWindow()
  // reads; a step on the device reads nothing back.
  // The loss of backward(): cross-entropy with --label-smoothing, for class indices or class
  // probabilities alike, as torch.nn.functional.cross_entropy (with probabilities, smoothing
  // takes targets x (1 - ls) + ls / C).
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets,
                            double labelSmoothing);

  void begin(int microBatches = 1);
  // `lossScale` weighs the micro-batch (1 / micro-batches); the loss scaler's scale multiplies it.
  // Returns the micro-batch's loss, unscaled, 0-dim on the device (not read back).
  torch::Tensor backward(const torch::Tensor& images, const torch::Tensor& labels,
                         double lossScale);
  StepResult finish(double lr, bool lossFinite = true);
  // The steps since the last call, read from the device (one copy); the step counts of a device
  // skip put right. Call it before saving the optimizer's state.
  StepWindow takeWindow();

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
  optim::OptimizerKind optimizerKind() const { return o_.optimizer; }
  LossScaler* lossScaler() { return scaler_ ? &*scaler_ : nullptr; }  // null without loss scaling
  std::vector<torch::Tensor> trainableParameters() const;

 private:
  StepResult finishStep(double lr, bool lossFinite);
  StepResult finishOnHost(const torch::Tensor& skip, const std::vector<torch::Tensor>& grads,
                          double lr);
  // The NonFinite kind of the step (0-dim on the device); `grads` empty: not checked.
  torch::Tensor nonFiniteKind(const torch::Tensor& ranksFlagged,
                              const std::vector<torch::Tensor>& grads, bool lossFinite) const;
  void restoreBuffersWhere(const torch::Tensor& skip);
  void clipOnDevice(const std::vector<torch::Tensor>& grads);

  models::Model model_;
  StepOptions o_;
  distributed::Communicator& comm_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<LossScaler> scaler_;
  std::unique_ptr<distributed::GradReducer> reducer_;
  FinetuneRecipe recipe_;            // finetune only
  std::vector<double> groupScales_;  // the optimizer's groups' learning-rate multipliers
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Tensor> params_;     // the trainable ones
  torch::Tensor top1Correct_, top1Seen_;  // int64 scalars on the model's device (undefined: none)
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
  torch::Tensor lastGradNorm_;   // 0-dim (undefined: none)
  torch::Tensor stepLoss_;       // float64 0-dim: this step's weighted loss so far
  torch::Tensor lossNotFinite_;  // bool 0-dim: a micro-batch loss of this rank is not finite
  std::unique_ptr<StepTally> tally_;
  bool deviceSkip_ = false;
  bool warmingUp_ = false;  // a graph's warm-up step: skipped on the device, not counted
  std::string whyNotCaptured_;
  torch::Tensor graphLr_;
  std::unique_ptr<StepGraphs> graphs_;  // --cuda-graph: the captured steps
};

}  // namespace fixres::engine
