// Dynamic loss scaling for fp16 training, with torch.cuda.amp.GradScaler's algorithm and defaults:
// the loss is multiplied by the scale before backward; the gradients are divided by it again
// (after the all-reduce); a step whose gradients hold an inf or NaN is skipped and the scale
// backs off, and after `growthInterval` applied steps in a row it grows.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace fixres::engine {

struct LossScalerOptions {
  double initScale = 65536.0;  // 2^16
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
};

// Validated at construction (UsageError naming the bad value). The scale is kept as a float32
// value, as GradScaler's scale tensor.
class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});

  float scale() const { return scale_; }
  // Applied steps since the scale last changed (GradScaler's _growth_tracker).
  int64_t growthTracker() const { return growthTracker_; }
  const LossScalerOptions& options() const { return o_; }

  // Whether every (defined) gradient is finite; then multiplies each by the float32 reciprocal
  // of the scale, as GradScaler.unscale_ (which checks the values before unscaling). One
  // synchronisation.
  bool unscale(const std::vector<torch::Tensor>& grads) const;
  // After a step: back off (and restart the count) when it overflowed, otherwise count it and
  // grow the scale every growthInterval steps (unless the grown scale would not be a finite
  // float, as torch._amp_update_scale_).
  void update(bool overflowed);
  // A checkpoint's state. UsageError when the scale is not a finite number > 0.
  void setState(double scale, int64_t growthTracker);

 private:
  LossScalerOptions o_;
  float scale_;
  int64_t growthTracker_ = 0;
};

}  // namespace fixres::engine
