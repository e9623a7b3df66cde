// Progressive resizing as FFCV trains ResNets: the training resolution ramps linearly from
// minRes to maxRes between two epochs, rounded to a multiple of the network's stride, then stays
// at maxRes (the final training resolution, the one FixRes fine-tuning starts from).
#pragma once

#include "fixres/common/Setting.h"

namespace fixres::engine {

struct ProgressiveResize {
  int minRes = 0;  // 0: off (every epoch at --input-size)
  int maxRes = 0;
  int startRamp = 0;  // epoch (0-based) where the ramp starts: minRes up to it
  int endRamp = 0;    // epoch where it reaches maxRes, and stays

  bool enabled() const { return minRes > 0 || maxRes > 0; }

  template <typename Self, typename V>
  static void visitSettings(Self& p, V&& v) {
    constexpr auto kDefines = SettingRole::kDefinesRun;
    v(Setting{"min_res",
              "--min-res",
              "Data",
              "Progressive resizing (FFCV): training resolution of the first epochs (0: off, every "
              "epoch at --input-size, which then sizes the evaluations only)",
              {},
              kDefines,
              "train"},
      p.minRes);
    v(Setting{"max_res",
              "--max-res",
              "Data",
              "Progressive resizing: the final training resolution, from --end-ramp on",
              {},
              kDefines,
              "train"},
      p.maxRes);
    v(Setting{"start_ramp",
              "--start-ramp",
              "Data",
              "Progressive resizing: epoch (0-based) where the ramp from --min-res starts",
              {},
              kDefines,
              "train"},
      p.startRamp);
    v(Setting{"end_ramp",
              "--end-ramp",
              "Data",
              "Progressive resizing: epoch where --max-res is reached; in between the resolution "
              "is interpolated and rounded to a multiple of the network's stride",
              {},
              kDefines,
              "train"},
      p.endRamp);
  }
  // UsageError naming the flag (--min-res, --max-res, --start-ramp, --end-ramp).
  void validate(int epochs) const;
};

// FFCV's get_resolution with `stride` for its 32: minRes up to startRamp, maxRes from endRamp,
// in between round(interp(epoch) / stride) * stride (numpy's round: half to even).
int progressiveResolution(const ProgressiveResize& p, int epoch, int stride);

}  // namespace fixres::engine
