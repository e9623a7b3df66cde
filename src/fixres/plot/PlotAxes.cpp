// Axis scales of a plot: nice ticks, the dense y range that leaves low outliers out, and the
// power-of-ten units of axes whose values come near the largest double.
#include "fixres/plot/PlotAxes.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fixres/common/Error.h"

namespace fixres {
namespace {

constexpr double kMinClipGain = 3;  // clip low outliers only when the y span shrinks this much

}  // namespace

AxisTicks niceTicks(double lo, double hi, int maxIntervals, bool integerStep) {
  FIXRES_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, UsageError,
               "niceTicks: need finite lo <= hi, got [", lo, ", ", hi, "]");
  FIXRES_CHECK(std::isfinite(hi - lo), UsageError, "niceTicks: range too wide: [", lo, ", ", hi,
               "]");
  maxIntervals = std::clamp(maxIntervals, 1, 1000);
  // One value: an axis from 0 to twice it (a constant learning rate of 0.001 drawn on [0, 0.002],
  // not lost on [-1, 1]); 0 alone on [-1, 1].
  if (hi - lo <= 1e-12 * std::max(1.0, std::fabs(lo))) {
    const double v = 0.5 * (lo + hi);
    if (v > 0)
      lo = 0, hi = 2 * v;
    else if (v < 0)
      lo = 2 * v, hi = 0;
    else
      lo = -1, hi = 1;
  }
  const double raw = (hi - lo) / maxIntervals;
  AxisTicks t;
  // Start one decade below the raw step so that no smaller valid step is skipped; the step grows
  // until the widened axis needs at most maxIntervals intervals.
  for (int k = static_cast<int>(std::floor(std::log10(raw))) - 1;; ++k) {
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
      const double s = k >= 0 ? m * std::pow(10.0, k) : m / std::pow(10.0, -k);
      if (integerStep && (s < 1 || std::fabs(s - std::round(s)) > 1e-9)) continue;
      const double first = std::floor(lo / s + 1e-9), last = std::ceil(hi / s - 1e-9);
      if (last - first > maxIntervals) continue;
      t.step = s;
      for (double i = first; i <= last + 0.5; i += 1) t.values.push_back(i * s);
      t.first = t.values.front();
      t.last = t.values.back();
      return t;
    }
  }
}

DenseRange denseRange(const std::vector<double>& values, double madFactor) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  DenseRange r;
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  r.lo = v.front();
  r.hi = v.back();
  const size_t n = v.size();
  if (n < 5 || !(madFactor > 0)) return r;
  auto median = [](const std::vector<double>& sorted) {
    const size_t m = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
  };
  const double med = median(v);
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::fabs(x - med));
  std::sort(dev.begin(), dev.end());
  const double fence = med - madFactor * median(dev);
  const auto kept = std::lower_bound(v.begin(), v.end(), fence);
  if (kept == v.begin()) return r;
  // Clip only when it pays; otherwise the low values are part of the curve.
  if (r.hi - r.lo < kMinClipGain * (r.hi - *kept)) return r;
  r.lo = *kept;
  r.clipped = true;
  return r;
}

int axisExponent(const std::vector<double>& values) {
  double largest = 0;
  for (double x : values)
    if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
  return largest < 1e15 ? 0 : static_cast<int>(std::floor(std::log10(largest)));
}

double inUnits(double x, int exponent) {
  return exponent == 0 ? x : x / std::pow(10.0, exponent);
}

std::string unitLabel(const std::string& text, int exponent) {
  if (exponent == 0 || text.find_first_not_of("-0.") == std::string::npos) return text;
  const auto e = text.find_first_of("eE");
  if (e == std::string::npos) return text + "e" + std::to_string(exponent);
  return text.substr(0, e) + "e" + std::to_string(std::atoi(text.c_str() + e + 1) + exponent);
}

}  // namespace fixres
