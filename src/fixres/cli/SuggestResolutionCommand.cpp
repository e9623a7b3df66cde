// `fixres suggest-resolution`: the test resolution that matches apparent object sizes, from the
// RandomResizedCrop scale range and the 256/224 crop ratio (docs/resolution.md).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/engine/Resolution.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {

Command addSuggestResolutionCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "suggest-resolution", "Test resolution matching apparent object sizes of RRC training");
  auto s = std::make_shared<engine::SuggestRequest>();
  engine::SuggestRequest::visitSettings(*s, SettingsBinder{*sub});
  bindSetting(*sub, kTrainSizeRow, s->trainSize);
  bindSetting(*sub, engine::kArchitectureRow, s->architecture);
  return {sub, [s]() -> int {
            const engine::SuggestRequest& q = *s;
            q.validate();
            const int stride = models::outputStride(q.architecture);
            const int multiple = q.multiple.value_or(1);
            auto r = engine::suggestResolution(q.trainSize, q.scaleMin, q.scaleMax, q.cropRatio,
                                               multiple);
            std::printf("train size %d, RRC scale [%.3g, %.3g], crop ratio %.4g\n", q.trainSize,
                        q.scaleMin, q.scaleMax, q.cropRatio);
            std::printf("closed form: E[s^-1/2] = %.4f -> test size %.1f (suggest %d)\n",
                        r.expectedInvSqrtScale, r.suggested, r.suggestedRounded);
            if (const auto [w, h] = q.imageSides(); w > 0) {
              auto m =
                  engine::simulateResolution(q.trainSize, w, h, q.scaleMin, q.scaleMax, 3.0 / 4.0,
                                             4.0 / 3.0, q.cropRatio, 200000, 0, multiple);
              std::printf("simulated RRC on %dx%d: factor %.4f -> test size %.1f (suggest %d)\n", w,
                          h, m.expectedInvSqrtScale, m.suggested, m.suggestedRounded);
            }
            // The nearest multiple of the stride (the higher one on a tie), never below one
            // stride: the sizes at which the last feature map covers the image exactly. A
            // --multiple given is the user's own rounding and wins.
            const int onStride =
                std::max(stride, static_cast<int>(std::floor(r.suggested / stride + 0.5)) * stride);
            if (q.multiple)
              std::printf("suggested test resolution: %d (a multiple of %d; %.1f raw)\n",
                          r.suggestedRounded, multiple, r.suggested);
            else
              std::printf("suggested test resolution: %d (%s's stride is %d px; %.1f raw)\n",
                          onStride, q.architecture.c_str(), stride, r.suggested);
            return 0;
          }};
}

}  // namespace fixres::cli
