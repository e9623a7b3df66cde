// `fixres suggest-resolution`: the test resolution that matches apparent object sizes, from the
// RandomResizedCrop scale range and the 256/224 crop ratio (docs/resolution.md).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/common/Error.h"
#include "fixres/engine/Resolution.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {

Command addSuggestResolutionCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "suggest-resolution", "Test resolution matching apparent object sizes of RRC training");
  struct State {
    int trainSize = 224, multiple = 1;
    double scaleMin = 0.08, scaleMax = 1.0, cropRatio = 224.0 / 256.0;
    std::string imageSize, architecture = "ResNet50";
    bool multipleGiven = false;
  };
  auto s = std::make_shared<State>();
  addShared(*sub, "--train-size", s->trainSize);
  sub->add_option("--scale-min", s->scaleMin, "RandomResizedCrop minimum area fraction")
      ->check(finiteIn(0, 1, /*openLow=*/true))
      ->capture_default_str();
  sub->add_option("--scale-max", s->scaleMax, "RandomResizedCrop maximum area fraction")
      ->check(finiteIn(0, 1, /*openLow=*/true))
      ->capture_default_str();
  sub->add_option("--crop-ratio", s->cropRatio, "Test crop / resize ratio (224/256)")
      ->check(finiteIn(0, 1, /*openLow=*/true))
      ->capture_default_str();
  sub->add_option("--image-size", s->imageSize,
                  "WxH: also simulate torchvision's RRC sampling on images of this size");
  sub->add_option("--multiple", s->multiple, "Round the suggestion to a multiple of this")
      ->check(intIn(1, 4096))
      ->capture_default_str();
  addShared(*sub, "--architecture", s->architecture);
  return {sub, [s, sub]() -> int {
            s->multipleGiven = sub->get_option("--multiple")->count() > 0;
            const int stride = models::outputStride(s->architecture);
            FIXRES_CHECK(s->scaleMin <= s->scaleMax, UsageError, "--scale-min (", s->scaleMin,
                         ") must not exceed --scale-max (", s->scaleMax, ")");
            int w = 0, h = 0;
            if (!s->imageSize.empty()) {
              char rest = 0;
              FIXRES_CHECK(std::sscanf(s->imageSize.c_str(), "%dx%d%c", &w, &h, &rest) == 2 &&
                               w >= 1 && w <= 65535 && h >= 1 && h <= 65535,
                           UsageError, "--image-size must be WxH with W and H in [1, 65535], got '",
                           s->imageSize, "'");
            }
            auto r = engine::suggestResolution(s->trainSize, s->scaleMin, s->scaleMax, s->cropRatio,
                                               s->multiple);
            std::printf("train size %d, RRC scale [%.3g, %.3g], crop ratio %.4g\n", s->trainSize,
                        s->scaleMin, s->scaleMax, s->cropRatio);
            std::printf("closed form: E[s^-1/2] = %.4f -> test size %.1f (suggest %d)\n",
                        r.expectedInvSqrtScale, r.suggested, r.suggestedRounded);
            if (!s->imageSize.empty()) {
              auto m = engine::simulateResolution(s->trainSize, w, h, s->scaleMin, s->scaleMax,
                                                  3.0 / 4.0, 4.0 / 3.0, s->cropRatio, 200000, 0,
                                                  s->multiple);
              std::printf("simulated RRC on %dx%d: factor %.4f -> test size %.1f (suggest %d)\n", w,
                          h, m.expectedInvSqrtScale, m.suggested, m.suggestedRounded);
            }
            // The nearest multiple of the stride (the higher one on a tie), never below one
            // stride: the sizes at which the last feature map covers the image exactly. A
            // --multiple given is the user's own rounding and wins.
            const int onStride =
                std::max(stride, static_cast<int>(std::floor(r.suggested / stride + 0.5)) * stride);
            if (s->multipleGiven)
              std::printf("suggested test resolution: %d (a multiple of %d; %.1f raw)\n",
                          r.suggestedRounded, s->multiple, r.suggested);
            else
              std::printf("suggested test resolution: %d (%s's stride is %d px; %.1f raw)\n",
                          onStride, s->architecture.c_str(), stride, r.suggested);
            return 0;
          }};
}

}  // namespace fixres::cli
