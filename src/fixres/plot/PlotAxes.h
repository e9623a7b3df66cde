// The axis scales of a plot (SvgPlot.h): nice ticks, the low-outlier rule for the y range, and
// the power-of-ten units of axes whose values come near the largest double.
#pragma once

#include <string>
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

// Axes in units of a power of ten. Values near the largest double (+-1.7e308) would overflow an
// axis' span, its padding and its ticks one step beyond the data, and print as 309 digits: such an
// axis is drawn in units of 10^exponent. axisExponent: 0 while every finite |value| is below 1e15
// (values print in full), else floor(log10) of the largest finite |value| (the scaled values are
// then below 10). inUnits: x / 10^exponent. unitLabel: the label of a value printed in those units
// ("1.5" -> "1.5e308", "2.5e-05" -> "2.5e303"; "0", and any label with exponent 0, unchanged).
int axisExponent(const std::vector<double>& values);
double inUnits(double x, int exponent);
std::string unitLabel(const std::string& text, int exponent);

}  // namespace fixres
