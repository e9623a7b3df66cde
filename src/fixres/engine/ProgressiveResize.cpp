// The training resolution per epoch.
#include "fixres/engine/ProgressiveResize.h"

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/engine/ModelSpec.h"  // kImageSizes

namespace fixres::engine {

void ProgressiveResize::validate(int epochs) const {
  if (!enabled()) return;
  const Range sizes = kImageSizes;
  FIXRES_CHECK(sizes.contains(minRes), UsageError, "--min-res must be ", sizes.describe(),
               " with --max-res, got ", minRes);
  FIXRES_CHECK(maxRes >= minRes && sizes.contains(maxRes), UsageError,
               "--max-res must be in [--min-res, ", sizes.hi, "], got ", maxRes, " (--min-res ",
               minRes, ")");
  FIXRES_CHECK(startRamp >= 0, UsageError, "--start-ramp must be >= 0, got ", startRamp);
  FIXRES_CHECK(endRamp > startRamp, UsageError, "--end-ramp must be > --start-ramp (", startRamp,
               "), got ", endRamp);
  FIXRES_CHECK(endRamp <= epochs, UsageError, "--end-ramp must be <= --epochs (", epochs, "), got ",
               endRamp);
}

int progressiveResolution(const ProgressiveResize& p, int epoch, int stride) {
  if (epoch <= p.startRamp) return p.minRes;
  if (epoch >= p.endRamp) return p.maxRes;
  // numpy.interp's arithmetic: slope * (x - x0) + y0.
  const double slope = static_cast<double>(p.maxRes - p.minRes) / (p.endRamp - p.startRamp);
  const double res = slope * (epoch - p.startRamp) + p.minRes;
  // numpy.round: half to even (std::nearbyint in the default rounding mode).
  const int steps = static_cast<int>(std::nearbyint(res / stride));
  return std::max(stride, steps * stride);
}

}  // namespace fixres::engine
