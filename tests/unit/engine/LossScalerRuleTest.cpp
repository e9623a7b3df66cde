// The loss scaler's update rule, GradScaler's (torch._amp_update_scale_), written out step by step.
// Its defaults and the steps it skips: OptimizerTest.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "fixres/common/Error.h"
#include "fixres/step/LossScaler.h"

namespace fixres::engine {
namespace {

// GradScaler's update rule (torch._amp_update_scale_, CUDA only, so written out here): an
// overflow multiplies the scale by the backoff factor and restarts the count; growthInterval
// applied steps in a row multiply it by the growth factor; a grown scale that is not a finite
// float is not taken.
TEST(LossScalerTest, ScaleFollowsGradScalersUpdateRule) {
  LossScalerOptions o;
  o.initScale = 8;
  o.growthInterval = 3;
  LossScaler scaler(o);
  const bool overflow[] = {false, false, false, true, false, false, false, false, true, true};
  float scale = 8;
  int64_t tracker = 0;
  for (bool inf : overflow) {
    scaler.update(inf);
    if (inf) {
      scale *= 0.5f;
      tracker = 0;
    } else if (++tracker == 3) {
      scale *= 2;
      tracker = 0;
    }
    EXPECT_EQ(scaler.scale(), scale);
    EXPECT_EQ(scaler.growthTracker(), tracker);
  }
  EXPECT_EQ(scale, 4.0f);  // 8 -> 16 -> 8 -> 16 -> 8 -> 4
  LossScalerOptions top;
  top.initScale = std::ldexp(1.0, 127);
  top.growthInterval = 1;
  LossScaler high(top);
  high.update(false);  // 2^128 is not a finite float
  EXPECT_EQ(high.scale(), static_cast<float>(std::ldexp(1.0, 127)));
  EXPECT_EQ(high.growthTracker(), 0);
  EXPECT_THROW(LossScaler(LossScalerOptions{0, 2, 0.5, 1}), UsageError);
}

}  // namespace
}  // namespace fixres::engine
