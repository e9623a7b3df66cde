// The test resolution that matches apparent object sizes between RandomResizedCrop training
// and resize + center-crop testing (FixRes paper, section 3; docs/resolution.md).
#pragma once

#include <cstdint>
#include <vector>

namespace fixres::engine {

struct ResolutionAnalysis {
  double expectedInvSqrtScale = 0;  // E[s^-1/2] of the crop area fraction s actually used
  double suggested = 0;             // K_test, before rounding
  int suggestedRounded = 0;         // rounded to a multiple of `multiple`
};

// Closed form: s uniform in [scaleMin, scaleMax], aspect jitter ignored (it does not change the
// geometric-mean magnification), K_test = cropRatio * E[s^-1/2] * K_train.
ResolutionAnalysis suggestResolution(int trainSize, double scaleMin = 0.08, double scaleMax = 1.0,
                                     double cropRatio = 224.0 / 256.0, int multiple = 1);

// Monte Carlo over torchvision's RandomResizedCrop sampling (10 attempts, then the clamped
// centre fallback) on a W x H image: the crop areas that are really used, including the
// rejections at large scales and extreme aspect ratios.
ResolutionAnalysis simulateResolution(int trainSize, int imageWidth, int imageHeight,
                                      double scaleMin = 0.08, double scaleMax = 1.0,
                                      double ratioMin = 3.0 / 4.0, double ratioMax = 4.0 / 3.0,
                                      double cropRatio = 224.0 / 256.0, int64_t samples = 200000,
                                      uint64_t seed = 0, int multiple = 1);

// Test resolutions for a sweep: the multiples of the network's output stride from 0.6x to 1.8x
// the train size (rounded up at the low end), plus the train size itself if it is not one; none
// outside kImageSizes (ModelSpec.h), the sizes every command takes.
// Other sizes make the strided convolutions reach the zero padding on the right and bottom
// edges, which a model trained at a multiple never saw: accuracy drops for that reason alone.
std::vector<int> sweepSizes(int trainSize, int stride);

}  // namespace fixres::engine
