// A small line chart written as SVG (no plotting dependency): what `fixres sweep` draws.
//
// Axes. Both axes carry "nice" ticks: the step is 1, 2, 2.5 or 5 times a power of ten, every tick
// is an integer multiple of the step, and the axis is widened to the enclosing ticks (see
// niceTicks). When every x value of every series is an integer (resolutions in pixels), the
// x step is an integer too, so x ticks fall on whole resolutions. An axis with a value of 1e15 or
// more in magnitude (up to +-1.7e308, the largest doubles) is drawn in units of a power of ten and
// labelled in them ("1.5e308"; axisExponent), so that its span and ticks never overflow.
//
// Y range and low outliers. A sweep often has one resolution that fails (16 px at 41 % top-1
// while the others sit at 88-90 %); drawn to scale, it flattens the region where the curves
// differ. The rule (see denseRange):
//   - pool the finite y values of all series; with fewer than 5 values nothing is clipped;
//   - a value is a low outlier when it lies below median - k * MAD, where MAD is the median of
//     the absolute deviations from the median and k = PlotOptions::outlierMadFactor (6; for
//     normal data about 4 standard deviations). Median and MAD stay put while up to half of the
//     values are outliers: 4 resolutions x 2 series with both 16 px runs failing is 25 %, which
//     already breaks a quartile-based fence;
//   - the outliers are clipped only when that pays: the span of all values is at least 3 times
//     the span of the remaining ones. Otherwise every value is kept.
// The y axis then covers the kept values (padded by 4 % of their span and widened to nice ticks).
// Each point below the axis is drawn as a small downward triangle on the bottom edge at its x,
// labelled "<y> <yUnit> at <x> <xUnit>" (e.g. "41.0 % at 16 px"); labels that would overlap stack
// upwards, lowest value first; the series reaches the triangle with a dashed segment (not to
// scale); a broken-axis mark is drawn on the y axis. Points are never clipped at the top: in an
// accuracy sweep, failures fall low.
//
// Marks. Vertical lines at given x positions (train resolution, suggested resolution, ...), and
// per series optionally the point with the largest y ("best", the first one on ties), which is
// ringed and gets a dashed mark in the series' color labelled "best <x> <xUnit> (<y> <yUnit>)".
// Mark labels sit in a band above the plot, stacked in rows so that no two labels overlap and no
// mark line crosses a label (label widths are estimated at 0.6 em per character). Each row makes
// the plot 14 px shorter; the picture grows taller only if the plot would drop below 40 px.
//
// Generated labels print y with at least one decimal, more when the kept y values span less than
// 1 (0.8812 for values spanning 0.881..0.889), and x as given (16, 32.5).
//
// The output is deterministic (same input, same bytes). Elements carry a `class` attribute
// ("xtick", "ytick", "mark", "mark-label", "best", "outlier", "outlier-label", "axis-break") so
// that tests and scripts can find them.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "fixres/plot/PlotAxes.h"  // niceTicks, denseRange

namespace fixres {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length; pairs beyond the shorter one are ignored
  std::string color = "#1f77b4";
  bool highlightMax = false;  // ring the point with the largest y and mark its x
  // Optional, by point: a short text beside the point (class "point-label": a bin's image count)
  // and whether the point stands on little evidence, drawn hollow (class "weak").
  std::vector<std::string> pointLabels = {};
  std::vector<bool> weak = {};
  bool joined = true;  // false: points only, no line between them (cells that form no curve)
};

enum class MarkStyle { kDashed, kDotted, kSolid };

// A vertical line across the plot at data position x, labelled above the plot.
struct PlotMark {
  double x = 0;
  std::string label;
  std::string color = "#666666";
  MarkStyle style = MarkStyle::kDashed;
};

struct PlotOptions {
  std::string title, xLabel, yLabel;
  // Units used in generated labels (outliers, best points), e.g. "px" and "%". May be empty.
  std::string xUnit, yUnit;
  std::vector<PlotMark> marks;
  int width = 720, height = 440;
  bool clipLowOutliers = true;    // apply the low-outlier rule above
  double outlierMadFactor = 6.0;  // k in median - k * MAD
  // Fixed axis ends, for values known to lie within them (percentages: 0 and 100): an axis whose
  // two ends are finite with min < max spans them (widened to nice ticks) instead of the data.
  double xMin = NAN, xMax = NAN, yMin = NAN, yMax = NAN;
};

// The SVG document (UTF-8 text). Points with a non-finite x or y are skipped and break the line;
// series with no finite points are listed in the legend only; every finite value is plotted.
// Throws UsageError when width or height is too small (< 320 x 150) or outlierMadFactor <= 0.
std::string lineChartSvg(const std::vector<PlotSeries>& series, const PlotOptions& options);

// s with <, >, & and " written as XML entities: text or an attribute value in an SVG document.
std::string svgEscape(const std::string& s);

// One SVG document holding `charts` (documents made by lineChartSvg) one below the other, each
// nested as an <svg> element at its offset; as wide as the widest. InternalError for a chart
// that is not such a document.
std::string stackedSvg(const std::vector<std::string>& charts);

}  // namespace fixres
