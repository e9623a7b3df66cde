// The test resolution that matches apparent object sizes between RandomResizedCrop training
// and resize + center-crop testing (FixRes paper, section 3; docs/resolution.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::engine {

// `fixres suggest-resolution`'s request: its own flags, one row each (--train-size and
// --architecture are shared rows the command binds beside them).
struct SuggestRequest {
  int trainSize = 224;
  std::string architecture = "ResNet50";  // whose output stride the suggestion is rounded to
  double scaleMin = 0.08, scaleMax = 1.0, cropRatio = 224.0 / 256.0;
  std::string imageSize;        // "WxH": also simulate RRC on such images; "": not
  std::optional<int> multiple;  // the user's own rounding; none: the architecture's stride

  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    constexpr Range kFraction = Range::reals(0, 1, /*loOpen=*/true);
    constexpr const char* kCommand = "suggest-resolution";
    v(Setting{"", "--scale-min", "Resolution", "RandomResizedCrop minimum area fraction", kFraction,
              kInvocation, kCommand},
      r.scaleMin);
    v(Setting{"", "--scale-max", "Resolution", "RandomResizedCrop maximum area fraction", kFraction,
              kInvocation, kCommand},
      r.scaleMax);
    v(Setting{"", "--crop-ratio", "Resolution", "Test crop / resize ratio (224/256)", kFraction,
              kInvocation, kCommand},
      r.cropRatio);
    v(Setting{"",
              "--image-size",
              "Resolution",
              "WxH: also simulate torchvision's RRC sampling on images of this size",
              {},
              kInvocation,
              kCommand},
      r.imageSize);
    v(Setting{"", "--multiple", "Resolution",
              "Round the suggestion to a multiple of this (default: the architecture's output "
              "stride)",
              Range::integers(1, 4096), kInvocation, kCommand},
      r.multiple);
  }
  // UsageError naming the flags: --scale-min above --scale-max, an --image-size that is not WxH
  // with sides in [1, 65535].
  void validate() const;
  // --image-size's width and height ({0, 0} when not given).
  std::array<int, 2> imageSides() const;
};

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
