// Progressive resizing as FFCV trains ResNets: the training resolution ramps linearly from
// minRes to maxRes between two epochs, rounded to a multiple of the network's stride, then stays
// at maxRes (the final training resolution, the one FixRes fine-tuning starts from).
#pragma once

namespace fixres::engine {

struct ProgressiveResize {
  int minRes = 0;  // 0: off (every epoch at --input-size)
  int maxRes = 0;
  int startRamp = 0;  // epoch (0-based) where the ramp starts: minRes up to it
  int endRamp = 0;    // epoch where it reaches maxRes, and stays

  bool enabled() const { return minRes > 0 || maxRes > 0; }
  // UsageError naming the flag (--min-res, --max-res, --start-ramp, --end-ramp).
  void validate(int epochs) const;
};

// FFCV's get_resolution with `stride` for its 32: minRes up to startRamp, maxRes from endRamp,
// in between round(interp(epoch) / stride) * stride (numpy's round: half to even).
int progressiveResolution(const ProgressiveResize& p, int epoch, int stride);

}  // namespace fixres::engine
