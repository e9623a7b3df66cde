// Learning-rate schedules against their formulas: torch StepLR stepped with the epoch (as the
// reference), cosine annealing, linear warm-up, and the FixRes linear scaling rule.
#include "fixres/step/Schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

TEST(Schedule, StepLrDecaysEveryStepEpochs) {
  ScheduleOptions o;
  o.baseLr = 0.16;
  o.stepEpochs = 30;
  o.gamma = 0.1;
  o.totalEpochs = 120;
  Schedule s(o);
  EXPECT_DOUBLE_EQ(s.rate(0), 0.16);
  EXPECT_DOUBLE_EQ(s.rate(29, 0.99), 0.16);
  EXPECT_NEAR(s.rate(30), 0.016, 1e-15);
  EXPECT_NEAR(s.rate(95), 0.16 * 1e-3, 1e-15);
}

TEST(Schedule, CosineAndWarmup) {
  ScheduleOptions o;
  o.kind = ScheduleKind::kCosine;
  o.baseLr = 1.0;
  o.totalEpochs = 10;
  o.warmupEpochs = 2;
  Schedule s(o);
  EXPECT_NEAR(s.rate(1, 0.0), 0.5 * (1 + std::cos(0.0)) * 0.5, 1e-12);  // half way through warm-up
  EXPECT_NEAR(s.rate(2), 1.0, 1e-12);
  EXPECT_NEAR(s.rate(6), 0.5, 1e-12);  // middle of the cosine
  EXPECT_NEAR(s.rate(9, 0.999999), 0.0, 1e-6);
}

// torch's CosineAnnealingLR: eta_min + (eta_max - eta_min) (1 + cos(pi T_cur / T_max)) / 2, here
// over the epochs after the warm-up (as the torchvision references chain them).
TEST(Schedule, CosineFallsToItsFloor) {
  ScheduleOptions o;
  o.kind = ScheduleKind::kCosine;
  o.baseLr = 0.5;
  o.minLr = 0.02;
  o.totalEpochs = 12;
  o.warmupEpochs = 2;
  Schedule s(o);
  const double span = 10;
  for (double t : {2.0, 3.0, 4.5, 7.0, 10.25, 11.0, 11.999}) {
    const double expected = 0.02 + (0.5 - 0.02) * (1 + std::cos(M_PI * (t - 2) / span)) / 2;
    EXPECT_NEAR(s.rate(static_cast<int>(t), t - std::floor(t)), expected, 1e-12) << t;
  }
  EXPECT_NEAR(s.rate(12), 0.02, 1e-12);      // the floor, not 0, at the horizon
  EXPECT_NEAR(s.rate(1), 0.5 * 0.5, 1e-12);  // warm-up still ramps up to the base rate
  o.kind = ScheduleKind::kStep;  // the floor is the cosine's only: StepLR every 10 epochs
  o.stepEpochs = 10;
  EXPECT_NEAR(Schedule(o).rate(11), 0.5 * 0.1, 1e-12);
}

TEST(Schedule, FixresLinearScaling) {
  EXPECT_DOUBLE_EQ(fixresScaledLr(0.02, 64, 8), 0.16);   // the FixRes scratch recipe
  EXPECT_DOUBLE_EQ(fixresScaledLr(1e-3, 64, 8), 0.008);  // ResNet-50 fine-tuning
  EXPECT_DOUBLE_EQ(fixresScaledLr(1e-3, 8, 32), 0.004);  // ResNeXt-101 32x48d
}

TEST(Schedule, BadOptionsAreUsageErrors) {
  ScheduleOptions o;
  // An unknown kind is refused where the name is parsed (the --lr-schedule flag, config.json).
  EXPECT_THROW(parseScheduleKind("linear"), UsageError);
  o.kind = ScheduleKind::kStep;
  o.stepEpochs = 0;
  EXPECT_THROW(Schedule{o}, UsageError);
}

}  // namespace
}  // namespace fixres::engine
