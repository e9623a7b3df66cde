// The optimizer's update over whole parameter groups at once, through LibTorch's multi-tensor
// kernels (torch.optim's foreach=True and fused=True paths), in place of LibTorch's loop over
// parameters (one launch per operation and parameter on a GPU). Each optimizer's descriptor says
// which paths it has; this picks one and runs it.
#pragma once

#include <torch/torch.h>

#include "fixres/common/Choice.h"
#include "fixres/optim/Optimizer.h"

#if TORCH_VERSION_MAJOR >= 2
#define FIXRES_FUSED_OPTIMIZERS 1  // LibTorch 2.x has at::_fused_sgd_ and at::_fused_adamw_
#endif

namespace fixres::optim {

// loop: parameter by parameter, torch.optim's foreach=False arithmetic (LibTorch's own step, or
//   the descriptor's loop);
// foreach: torch.optim's foreach=True arithmetic with the at::_foreach_* kernels;
// fused: the fused kernels (LibTorch 2.x: SGD's and AdamW's);
// auto: fused where the build and the optimizer have it, else foreach, else loop.
enum class OptimizerImpl { kAuto, kLoop, kForeach, kFused };
const ChoiceTable<OptimizerImpl>& optimizerImpls();  // auto, loop, foreach, fused

// True when this build has the fused kernel of `kind`.
bool hasFusedKernel(OptimizerKind kind);
// What `impl` resolves to for `kind` in this build (never kAuto).
OptimizerImpl resolveOptimizerImpl(OptimizerImpl impl, OptimizerKind kind);
// UsageError naming --optimizer-impl when `kind` has no `impl` path in this build.
void checkOptimizerImpl(OptimizerImpl impl, OptimizerKind kind);

// One update of every group of `optimizer` (made by makeOptimizer for `kind`) with each group's
// options and learning rate, from the parameters' .grad (parameters without a gradient are left
// alone, as LibTorch's step does). The state stays in LibTorch's per-parameter state objects, so
// optimizerState()/restoreOptimizerState() and checkpoints are the same whatever the path.
// UsageError for a path `kind` lacks here.
void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl);
// optimizerStep through the fused kernels (kFused only; UsageError otherwise), DeviceSkip in
// OptimizerDescriptor.h.
void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                   const DeviceSkip& skip);
// Takes `skipped` steps off the step counts of `optimizer`'s states (AdamW, RMSprop, LAMB): steps
// the device skipped after the host had counted them.
void rewindStepCounts(torch::optim::Optimizer& optimizer, OptimizerKind kind, int64_t skipped);

}  // namespace fixres::optim
