// What the training steps since the last read did, counted on the step's device: the losses, the
// steps not applied, and the rule that halts a run whose steps are not finite. A step adds to the
// counts with a handful of scalar tensor operations and reads nothing back, so that a step on a
// GPU needs no host round trip; take() reads them all in one copy (every --log-every steps, and
// at epoch ends, stops and checkpoints).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace fixres::engine {

// Why a step was not finite (the first reason that holds, in this order).
enum class NonFinite {
  kNone = 0,
  kNanLoss = 1,   // this rank's loss is NaN
  kInfLoss = 2,   // this rank's loss is infinite
  kGradient = 3,  // another rank's loss, or the averaged gradient
};

// The steps since the last take(), read.
struct StepWindow {
  int64_t steps = 0;      // recorded steps
  int64_t applied = 0;    // steps whose update was applied
  int64_t skipped = 0;    // steps not applied because a value was not finite, or the run halted
  int64_t overflows = 0;  // loss scaling: steps skipped for an overflow (their loss counts)
  double lossSum = 0;     // the losses of the steps not skipped (applied or overflowed)
  int64_t lossCount = 0;
  int64_t firstSkipped = -1;  // index in the window of the first skipped step
  NonFinite firstKind = NonFinite::kNone;
  int64_t haltedAt = -1;  // index in the window of the step that halted the run (then skipped)
  NonFinite haltKind = NonFinite::kNone;
  int64_t skippedInARow = 0;  // non-finite steps in a row at the window's end
  bool lastApplied = false;   // the window's last step was applied
  // Steps skipped by the optimizer kernel itself (device skip) since the last take(): their
  // update counted a step that did not happen (TrainStep folds them back).
  int64_t deviceSkips = 0;
};

class StepTally {
 public:
  // maxSkippedInARow 0: the first non-finite step halts the run (--nan-policy stop); n > 0: the
  // step that makes more than n non-finite steps in a row halts it (--nan-policy skip). Once
  // halted, every later step is skipped until the run stops.
  StepTally(const torch::Device& device, int64_t maxSkippedInARow);

  // One step: `loss` its (weighted, finite or not) loss, `kind` a NonFinite value as a 0-dim
  // tensor on the device. Returns whether to skip the step (bool, 0-dim): not finite, or halted.
  // `deviceSkip`: the optimizer skips on the device (counted in deviceSkips).
  torch::Tensor record(const torch::Tensor& loss, const torch::Tensor& kind, bool deviceSkip);
  // Loss scaling: the step recorded last was not applied (an overflow), its loss still counts.
  void noteOverflow();
  // The window's deviceSkips so far, on the device (float 0-dim).
  torch::Tensor deviceSkips() const;
  // Reads the window (one device-to-host copy) and starts the next one.
  StepWindow take();

 private:
  torch::Tensor acc_;  // float64 on the device: the slots of StepTally.cpp
  int64_t max_;
  int64_t overflows_ = 0;
};

}  // namespace fixres::engine
