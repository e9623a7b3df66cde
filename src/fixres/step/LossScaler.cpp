// GradScaler's dynamic loss scaling (torch/cuda/amp/grad_scaler.py and _amp_update_scale_),
// written from its documented behaviour.
#include "fixres/step/LossScaler.h"

#include <cmath>

#include "fixres/common/Error.h"

namespace fixres::engine {

LossScaler::LossScaler(LossScalerOptions o) : o_(o), scale_(static_cast<float>(o.initScale)) {
  FIXRES_CHECK(std::isfinite(scale_) && scale_ > 0, UsageError,
               "loss scaling: the initial scale must be a finite float > 0, got ", o_.initScale);
  FIXRES_CHECK(std::isfinite(o_.growthFactor) && o_.growthFactor > 1, UsageError,
               "loss scaling: the growth factor must be > 1, got ", o_.growthFactor);
  FIXRES_CHECK(std::isfinite(o_.backoffFactor) && o_.backoffFactor > 0 && o_.backoffFactor < 1,
               UsageError, "loss scaling: the backoff factor must be in (0, 1), got ",
               o_.backoffFactor);
  FIXRES_CHECK(o_.growthInterval >= 1, UsageError,
               "loss scaling: the growth interval must be >= 1, got ", o_.growthInterval);
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& grads) const {
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> flags;
  for (const auto& g : grads)
    if (g.defined()) flags.push_back(torch::isfinite(g).all());
  if (!flags.empty() && !torch::stack(flags).all().item<bool>()) return false;
  // GradScaler: inv_scale = scale.double().reciprocal().float()
  const auto inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  for (const auto& g : grads)
    if (g.defined()) g.mul_(inv);
  return true;
}

void LossScaler::update(bool overflowed) {
  if (overflowed) {
    scale_ = static_cast<float>(scale_ * o_.backoffFactor);
    growthTracker_ = 0;
    return;
  }
  if (++growthTracker_ == o_.growthInterval) {
    const auto grown = static_cast<float>(scale_ * o_.growthFactor);
    if (std::isfinite(grown)) scale_ = grown;
    growthTracker_ = 0;
  }
}

void LossScaler::setState(double scale, int64_t growthTracker) {
  const auto s = static_cast<float>(scale);
  FIXRES_CHECK(std::isfinite(s) && s > 0, UsageError,
               "loss scaling: the scale must be a finite float > 0, got ", scale);
  FIXRES_CHECK(growthTracker >= 0, UsageError,
               "loss scaling: the growth tracker must be >= 0, got ", growthTracker);
  scale_ = s;
  growthTracker_ = growthTracker;
}

}  // namespace fixres::engine
