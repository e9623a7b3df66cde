// The optimizer's update over whole parameter groups at once, through LibTorch's multi-tensor
// kernels (torch.optim's foreach=True and fused=True paths), in place of LibTorch's loop over
// parameters (one launch per operation and parameter on a GPU).
#pragma once

#include <torch/torch.h>

#include "fixres/common/Choice.h"
#include "fixres/engine/Optimizer.h"

namespace fixres::engine {

// loop: parameter by parameter, torch.optim's foreach=False arithmetic (LibTorch's own step, but
//   for AdamW on LibTorch 2.x, whose C++ step still has torch 1.13's arithmetic);
// foreach: torch.optim's foreach=True arithmetic with the at::_foreach_* kernels (both builds);
// fused: at::_fused_sgd_ / at::_fused_adamw_ (LibTorch 2.x; RMSprop has no fused kernel and
//   takes foreach);
// auto: fused where the build and the optimizer have it, else foreach.
enum class OptimizerImpl { kAuto, kLoop, kForeach, kFused };
const ChoiceTable<OptimizerImpl>& optimizerImpls();  // auto, loop, foreach, fused

// True when this build has the fused kernel of `kind`.
bool hasFusedKernel(OptimizerKind kind);
// What `impl` resolves to for `kind` in this build (never kAuto).
OptimizerImpl resolveOptimizerImpl(OptimizerImpl impl, OptimizerKind kind);

// One update of every group of `optimizer` (made by makeOptimizer for `kind`) with each group's
// options and learning rate, from the parameters' .grad (parameters without a gradient are left
// alone, as LibTorch's step does). The state stays in LibTorch's per-parameter state objects, so
// optimizerState()/restoreOptimizerState() and checkpoints are the same whatever the path.
// UsageError for kFused in a build without that kernel.
void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl);

// A step the fused kernels may skip on the device, as torch.optim does with GradScaler's
// found_inf: `found` a float 0-dim tensor on the parameters' device (nonzero: leave parameters and
// state as they are); `pending` the steps skipped that way since the step counts were last put
// right (rewindStepCounts), which AdamW's bias correction subtracts. The first step then starts
// SGD's momentum from zeros (the same values as from the gradient).
// `lr` (float32 0-dim on the device; undefined: the groups' own rates) is the base rate read at
// run time, as a captured step needs: group k learns at lr x scales[k] (the tensor_lr kernels).
struct DeviceSkip {
  torch::Tensor found, pending;
  torch::Tensor lr;
  std::vector<double> scales;
};
// optimizerStep through the fused kernels (kFused only; UsageError otherwise).
void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                   const DeviceSkip& skip);
// Takes `skipped` steps off the step counts of `optimizer`'s states (AdamW, RMSprop): steps the
// device skipped after the host had counted them.
void rewindStepCounts(torch::optim::Optimizer& optimizer, OptimizerKind kind, int64_t skipped);

}  // namespace fixres::engine
