// The axis scales of a plot (SvgPlot.h): nice ticks, and the low-outlier rule for the y range.
#pragma once

#include <vector>

namespace fixres {

// Nice ticks for the interval [lo, hi]: the smallest step s in {1, 2, 2.5, 5} x 10^k that gives
// at most maxIntervals intervals once the axis is widened to floor(lo / s) * s and
// ceil(hi / s) * s. With integerStep, s is an integer (s >= 1 and 2.5 only from 25 on).
// values are first, first + s, ..., last, each computed as an integer multiple of s.
// An empty interval (lo == hi) is widened to [lo - 1, hi + 1] first; maxIntervals is clamped to
// [1, 1000]. Throws UsageError unless lo <= hi are finite and hi - lo does not overflow.
struct AxisTicks {
  double first = 0, last = 0, step = 1;
  std::vector<double> values;
};
AxisTicks niceTicks(double lo, double hi, int maxIntervals, bool integerStep = false);

// The low-outlier rule (SvgPlot.h, "Y range and low outliers") applied to values (non-finite ones
// are ignored): lo and hi span the kept values; clipped says whether any value was dropped. With no
// finite value, lo = hi = 0.
struct DenseRange {
  double lo = 0, hi = 0;
  bool clipped = false;
};
DenseRange denseRange(const std::vector<double>& values, double madFactor = 6.0);

}  // namespace fixres
