// Test-resolution analysis against the closed form of the FixRes paper (section 3) and against an
// independent numerical integral.
#include "fixres/engine/Resolution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::engine {
namespace {

TEST(Resolution, ClosedFormMatchesThePaperNumbers) {
  auto r = suggestResolution(224);
  // E[s^-1/2] = 2 (1 - sqrt(0.08)) / 0.92 = 1.5590; K_test = 0.875 * 1.5590 * 224 = 305.6
  EXPECT_NEAR(r.expectedInvSqrtScale, 2 * (1 - std::sqrt(0.08)) / 0.92, 1e-12);
  EXPECT_NEAR(r.expectedInvSqrtScale, 1.559, 1e-3);
  EXPECT_NEAR(r.suggested, 305.6, 0.1);
  EXPECT_NEAR(r.suggested / 224, 1.36, 0.01);  // "about 1.36 K_train"
  EXPECT_EQ(suggestResolution(224, 0.08, 1.0, 0.875, 32).suggestedRounded, 320);
}

TEST(Resolution, ClosedFormAgreesWithNumericalIntegration) {
  const double a = 0.25, b = 0.9;
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += 1.0 / std::sqrt(a + (b - a) * (i + 0.5) / n);
  EXPECT_NEAR(suggestResolution(100, a, b).expectedInvSqrtScale, sum / n, 1e-6);
}

TEST(Resolution, MonteCarloOnSquareImagesAgreesWithClosedFormUpToRejections) {
  // On a square image almost every first attempt fits except large scales with extreme ratios,
  // which are redrawn: the simulated expectation is slightly above the closed form.
  auto closed = suggestResolution(128);
  auto sim = simulateResolution(128, 1000, 1000);
  EXPECT_GT(sim.expectedInvSqrtScale, closed.expectedInvSqrtScale - 0.01);
  EXPECT_LT(sim.expectedInvSqrtScale, closed.expectedInvSqrtScale + 0.1);
}

TEST(Resolution, FixedScaleGivesExactMagnification) {
  // scale fixed at 0.25 on a square image, no aspect jitter: every crop is half the side.
  auto sim = simulateResolution(100, 400, 400, 0.25, 0.25, 1.0, 1.0, 1.0, 1000);
  EXPECT_NEAR(sim.expectedInvSqrtScale, 2.0, 1e-9);
  EXPECT_NEAR(sim.suggested, 200.0, 1e-6);
}

// Sweep sizes: multiples of the stride in [0.6, 1.8] x train size (written out by hand).
TEST(Resolution, SweepSizesAreStrideMultiplesAroundTheTrainSize) {
  // ResNet-50 (stride 32) trained at 224: 0.6 x 224 = 134.4 -> 160; 1.8 x 224 = 403.2 -> 384.
  EXPECT_EQ(sweepSizes(224, 32), (std::vector<int>{160, 192, 224, 256, 288, 320, 352, 384}));
  // The small-image stem (stride 8) trained at 24: 14.4 -> 16; 43.2 -> 40.
  EXPECT_EQ(sweepSizes(24, 8), (std::vector<int>{16, 24, 32, 40}));
  // A train size off the grid is added in order: 0.6 x 20 = 12 -> 16; 36 -> 32.
  EXPECT_EQ(sweepSizes(20, 8), (std::vector<int>{16, 20, 24, 32}));
  // The lowest size is at least one stride.
  EXPECT_EQ(sweepSizes(8, 8).front(), 8);
  EXPECT_THROW(sweepSizes(0, 8), UsageError);
}

// Never a size that no command takes (kImageSizes, [8, 4096]): a 4 px-patch ViT trained at 8 had
// 4 in its default sizes, and a sweep that chose it wrote a model folder predict refused.
TEST(Resolution, SweepSizesStayWithinTheSizesEveryCommandTakes) {
  // 0.6 x 8 = 4.8 -> 8 (the smallest size taken, a multiple of 4); 1.8 x 8 = 14.4 -> 12.
  EXPECT_EQ(sweepSizes(8, 4), (std::vector<int>{8, 12}));
  // Stride 3: 8 rounds up to 9.
  EXPECT_EQ(sweepSizes(10, 3).front(), 9);
  // 1.8 x 4000 = 7200, cut at 4096: the last multiple of 32 is 4096 itself.
  const auto big = sweepSizes(4000, 32);
  EXPECT_EQ(big.back(), 4096);
  for (int size : big) EXPECT_TRUE(kImageSizes.contains(size)) << size;
}

}  // namespace
}  // namespace fixres::engine
