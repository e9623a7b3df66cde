// SVG line chart: layout, low-outlier triangles and the drawing of marks (the axis scales, nice
// ticks and the clipped y range, are PlotAxes.cpp; the mark label rows, PlotLabels.cpp).
#include "fixres/plot/SvgPlot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/plot/PlotLabels.h"

namespace fixres {
namespace {

using plot::Interval;
using plot::kMarkFont;
using plot::kMarkRowH;
using plot::PlacedMark;
using plot::textWidth;

// Short, deterministic numbers for coordinates.
std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.2f", v);
  std::string s = b;
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string fixed(double v, int decimals) {
  char b[48];
  std::snprintf(b, sizeof(b), "%.*f", decimals, v);
  std::string s = b;
  if (s.find_first_not_of("-0.") == std::string::npos) s = s.substr(s[0] == '-' ? 1 : 0);
  return s;
}

// Data x values print without trailing zeros (16, 32.5).
std::string shortNum(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

// Decimals needed to print multiples of step exactly (0.25 -> 2, 2.5 -> 1, 5 -> 0).
int decimalsOf(double step) {
  for (int d = 0; d < 12; ++d) {
    double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 12;
}

std::string withUnit(const std::string& value, const std::string& unit) {
  return unit.empty() ? value : value + " " + unit;
}

}  // namespace

std::string svgEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

namespace {

// The dash attributes of a mark line. The k-th line on the same x as earlier ones is shifted by
// k half patterns, so that coinciding dashed lines alternate their colors instead of hiding.
std::string dashOf(MarkStyle style, int sharing) {
  const double period = style == MarkStyle::kDashed ? 10 : style == MarkStyle::kDotted ? 5 : 0;
  if (period == 0) return "";
  std::string d =
      style == MarkStyle::kDashed ? " stroke-dasharray=\"6,4\"" : " stroke-dasharray=\"2,3\"";
  if (sharing % 2) d += " stroke-dashoffset=\"" + num(period / 2) + "\"";
  return d;
}

struct Point {
  double x, y;
  size_t series, index;  // index in the series' vectors: lines break where a point is missing
};

// The finite points of every series, their y values, whether every x is an integer, and per
// series the point with the largest y when the series is highlighted (else null).
struct ChartData {
  std::vector<Point> points;
  std::vector<double> ys;
  bool integerX = true;
  std::vector<const Point*> best;
};

ChartData collectData(const std::vector<PlotSeries>& series) {
  ChartData d;
  for (size_t si = 0; si < series.size(); ++si) {
    const PlotSeries& s = series[si];
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      d.points.push_back({s.x[i], s.y[i], si, i});
      d.ys.push_back(s.y[i]);
      d.integerX = d.integerX && std::fabs(s.x[i] - std::round(s.x[i])) < 1e-9;
    }
  }
  d.best.assign(series.size(), nullptr);
  for (const Point& p : d.points)
    if (series[p.series].highlightMax && (!d.best[p.series] || p.y > d.best[p.series]->y))
      d.best[p.series] = &p;
  return d;
}

// The geometry of the picture: the plot area (left L, top T, width pw, height ph, bottom edge at
// y = bottom) in a picture of height `height`, and the ticks of both axes.
struct ChartFrame {
  double L = 70, R = 170, B = 55;  // margins left, right and below the plot
  double pw = 0, T = 0, ph = 0, height = 0, bottom = 0;
  AxisTicks xt, yt;
  int xExp = 0, yExp = 0;  // the axes' units are 10^xExp and 10^yExp (axisExponent)

  double px(double x) const { return L + (x - xt.first) / (xt.last - xt.first) * pw; }
  double py(double y) const { return T + (1 - (y - yt.first) / (yt.last - yt.first)) * ph; }
  bool below(const Point& p) const { return p.y < yt.first - 1e-9 * (yt.last - yt.first); }
};

// The x axis covers the points and the marks at a finite x.
AxisTicks xTicksFor(const ChartData& d, const std::vector<PlotMark>& marks, double pw,
                    const PlotOptions& o) {
  if (std::isfinite(o.xMin) && std::isfinite(o.xMax) && o.xMin < o.xMax)
    return niceTicks(o.xMin, o.xMax, std::max(2, static_cast<int>(pw / 60)), d.integerX);
  double x0 = std::numeric_limits<double>::max(), x1 = -x0;
  for (const Point& p : d.points) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
  for (const PlotMark& m : marks)
    if (std::isfinite(m.x)) x0 = std::min(x0, m.x), x1 = std::max(x1, m.x);
  if (x0 > x1) x0 = 0, x1 = 1;
  // The margin never takes an axis of steps or epochs (never negative) below 0.
  const double lo = x0 >= 0 ? std::max(0.0, x0 - 0.02 * (x1 - x0)) : x0 - 0.02 * (x1 - x0);
  return niceTicks(lo, x1 + 0.02 * (x1 - x0), std::max(2, static_cast<int>(pw / 60)), d.integerX);
}

// The series and marks in the units of the axes (axisExponent), which set f.xExp and f.yExp.
void toAxisUnits(std::vector<PlotSeries>& series, std::vector<PlotMark>& marks, ChartFrame& f) {
  std::vector<double> xs, ys;
  for (const PlotSeries& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
        xs.push_back(s.x[i]), ys.push_back(s.y[i]);
  for (const PlotMark& m : marks) xs.push_back(m.x);
  f.xExp = axisExponent(xs);
  f.yExp = axisExponent(ys);
  for (PlotSeries& s : series) {
    for (double& x : s.x) x = inUnits(x, f.xExp);
    for (double& y : s.y) y = inUnits(y, f.yExp);
  }
  for (PlotMark& m : marks) m.x = inUnits(m.x, f.xExp);
}

// The marks of the highlighted series' best points, labelled with their x and y.
std::vector<PlotMark> bestMarksOf(const std::vector<PlotSeries>& series, const ChartData& d,
                                  int valueDecimals, const ChartFrame& f, const PlotOptions& o) {
  std::vector<PlotMark> bestMarks;
  for (size_t si = 0; si < series.size(); ++si) {
    if (!d.best[si]) continue;
    const Point& p = *d.best[si];
    bestMarks.push_back({p.x,
                         "best " + withUnit(unitLabel(shortNum(p.x), f.xExp), o.xUnit) + " (" +
                             withUnit(unitLabel(fixed(p.y, valueDecimals), f.yExp), o.yUnit) + ")",
                         series[si].color, MarkStyle::kDashed});
  }
  return bestMarks;
}

// The explicit marks at a finite x, then the best marks, with their label rows.
std::vector<PlacedMark> placeMarks(const std::vector<PlotMark>& marks,
                                   const std::vector<PlotMark>& bestMarks, const ChartFrame& f,
                                   int width) {
  std::vector<PlacedMark> toPlace;
  for (const PlotMark& m : marks)
    if (std::isfinite(m.x)) toPlace.push_back({&m, f.px(m.x)});
  for (const PlotMark& m : bestMarks) toPlace.push_back({&m, f.px(m.x)});
  return plot::placeMarkLabels(toPlace, width);
}

// The vertical layout below the mark label rows, and the y axis over the dense range.
void fitHeight(ChartFrame& f, const std::vector<PlacedMark>& placed, const DenseRange& dense,
               const PlotOptions& o) {
  const int height = o.height;
  int rows = 0;
  for (const PlacedMark& p : placed) rows = std::max(rows, p.row + 1);
  f.T = 40 + rows * kMarkRowH;
  // Many stacked labels on a small picture: keep the plot usable by growing the picture.
  f.ph = std::max(40.0, height - f.T - f.B);
  f.height = f.T + f.ph + f.B;

  const int intervals = std::max(2, std::min(10, static_cast<int>(f.ph / 40)));
  const double yPad = 0.04 * (dense.hi - dense.lo);
  f.yt = std::isfinite(o.yMin) && std::isfinite(o.yMax) && o.yMin < o.yMax
             ? niceTicks(o.yMin, o.yMax, intervals)
             : niceTicks(dense.lo >= 0 ? std::max(0.0, dense.lo - yPad) : dense.lo - yPad,
                         dense.hi + yPad, intervals);
  f.bottom = f.T + f.ph;
}

// The document's start, the title, the grid with the ticks, the plot's frame, the axis labels.
void writeFrame(std::ostringstream& s, const ChartFrame& f, const PlotOptions& o) {
  const double L = f.L, pw = f.pw, T = f.T, ph = f.ph, bottom = f.bottom;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\""
    << num(f.height) << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << num(o.width / 2.0) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << svgEscape(o.title) << "</text>\n";
  const int xDecimals = decimalsOf(f.xt.step), yDecimals = decimalsOf(f.yt.step);
  for (double v : f.xt.values) {
    s << "<line x1=\"" << num(f.px(v)) << "\" x2=\"" << num(f.px(v)) << "\" y1=\"" << num(T)
      << "\" y2=\"" << num(bottom) << "\" stroke=\"#eee\"/>\n"
      << "<text class=\"xtick\" x=\"" << num(f.px(v)) << "\" y=\"" << num(bottom + 18)
      << "\" text-anchor=\"middle\">" << unitLabel(fixed(v, xDecimals), f.xExp) << "</text>\n";
  }
  for (double v : f.yt.values) {
    s << "<line x1=\"" << L << "\" x2=\"" << num(L + pw) << "\" y1=\"" << num(f.py(v)) << "\" y2=\""
      << num(f.py(v)) << "\" stroke=\"#ddd\"/>\n"
      << "<text class=\"ytick\" x=\"" << L - 6 << "\" y=\"" << num(f.py(v) + 4)
      << "\" text-anchor=\"end\">" << unitLabel(fixed(v, yDecimals), f.yExp) << "</text>\n";
  }
  s << "<rect x=\"" << L << "\" y=\"" << num(T) << "\" width=\"" << num(pw) << "\" height=\""
    << num(ph) << "\" fill=\"none\" stroke=\"#333\"/>\n"
    << "<text x=\"" << num(L + pw / 2) << "\" y=\"" << num(f.height - 12)
    << "\" text-anchor=\"middle\">" << svgEscape(o.xLabel) << "</text>\n"
    << "<text transform=\"translate(18," << num(T + ph / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << svgEscape(o.yLabel) << "</text>\n";
}

// The marks: lines from the plot bottom up to their label row, and the labels.
void writeMarks(std::ostringstream& s, const std::vector<PlacedMark>& placed, const ChartFrame& f) {
  for (size_t i = 0; i < placed.size(); ++i) {
    const PlacedMark& p = placed[i];
    int sharing = 0;
    for (size_t j = 0; j < i; ++j) sharing += std::fabs(placed[j].px - p.px) < 1;
    const double baseline = f.T - 6 - p.row * kMarkRowH;
    s << "<line class=\"mark\" x1=\"" << num(p.px) << "\" x2=\"" << num(p.px) << "\" y1=\""
      << num(f.bottom) << "\" y2=\"" << num(baseline - 9) << "\" stroke=\"" << p.mark->color
      << "\" stroke-width=\"1.3\"" << dashOf(p.mark->style, sharing) << "/>\n"
      << "<text class=\"mark-label\" x=\"" << num(p.left ? p.box.hi : p.box.lo) << "\" y=\""
      << num(baseline) << "\" font-size=\"" << kMarkFont << "\" fill=\"" << p.mark->color << "\""
      << (p.left ? " text-anchor=\"end\"" : "") << ">" << svgEscape(p.mark->label) << "</text>\n";
  }
}

// A low outlier: a downward triangle on the bottom edge at its x, with a label beside it.
struct Outlier {
  const Point* p;
  double x, tip;  // triangle tip in px
  bool left;      // label left of the triangle (near the right edge)
  std::string text;
};

// The low outliers, placed before the series (whose dashed lines end at their triangles). Where
// labels would overlap they stack upwards, lower values first.
std::vector<Outlier> placeOutliers(const ChartData& d, const ChartFrame& f, int valueDecimals,
                                   const PlotOptions& o) {
  std::vector<Outlier> outliers;
  for (const Point& p : d.points)
    if (f.below(p)) outliers.push_back({&p, f.px(p.x), f.bottom, false, ""});
  std::stable_sort(outliers.begin(), outliers.end(), [](const Outlier& a, const Outlier& b) {
    return a.p->x != b.p->x ? a.p->x < b.p->x : a.p->y < b.p->y;
  });
  // A point drawn by several series (a Pareto front over the cells) is one outlier, labelled once.
  outliers.erase(std::unique(outliers.begin(), outliers.end(),
                             [](const Outlier& a, const Outlier& b) {
                               return a.p->x == b.p->x && a.p->y == b.p->y;
                             }),
                 outliers.end());
  std::vector<std::pair<int, Interval>> taken;  // level, label extent
  for (Outlier& u : outliers) {
    u.text = withUnit(unitLabel(fixed(u.p->y, valueDecimals), f.yExp), o.yUnit) + " at " +
             withUnit(unitLabel(shortNum(u.p->x), f.xExp), o.xUnit);
    const double w = textWidth(u.text, kMarkFont);
    u.left = u.x + 10 + w > f.L + f.pw;
    const Interval box = u.left ? Interval{u.x - 10 - w, u.x + 6} : Interval{u.x - 6, u.x + 10 + w};
    int level = 0;
    for (bool clash = true; clash; level += clash) {
      clash = false;
      for (const auto& t : taken) clash = clash || (t.first == level && t.second.overlaps(box, 4));
    }
    taken.push_back({level, box});
    u.tip = f.bottom - 4 - level * kMarkRowH;
  }
  return outliers;
}

// Where the dashed line to point p ends: its outlier's triangle tip.
double tipOf(const std::vector<Outlier>& outliers, const Point* p, double bottom) {
  for (const Outlier& u : outliers)
    if (u.p->x == p->x && u.p->y == p->y) return u.tip;  // the same place: one triangle
  return bottom;
}

// Where a point's label goes: right above the point, else right below, left above, left below,
// the first place that overlaps no label placed before it (`placed`, boxes of 10 px text at 0.6
// em per character); right above when every place is taken.
std::pair<double, double> placePointLabel(std::vector<std::array<double, 4>>& placed, double x,
                                          double y, const std::string& text) {
  const double w = textWidth(text, 10), h = 10;
  const std::pair<double, double> tries[] = {
      {x + 5, y - 6}, {x + 5, y + 14}, {x - 5 - w, y - 6}, {x - 5 - w, y + 14}};
  for (const auto& [lx, ly] : tries) {
    const std::array<double, 4> box{lx, ly - h, lx + w, ly};
    bool clash = false;
    for (const auto& b : placed)
      clash = clash || (box[0] < b[2] && b[0] < box[2] && box[1] < b[3] && b[1] < box[3]);
    if (!clash) {
      placed.push_back(box);
      return {lx, ly};
    }
  }
  placed.push_back({tries[0].first, tries[0].second - h, tries[0].first + w, tries[0].second});
  return tries[0];
}

// Series si: solid lines between points on the axis, dashed ones down to clipped points, the
// points, the ring of its best point.
void writeSeries(std::ostringstream& s, const PlotSeries& ser, size_t si, const ChartData& d,
                 const ChartFrame& f, const std::vector<Outlier>& outliers) {
  std::vector<const Point*> own;
  for (const Point& p : d.points)
    if (p.series == si) own.push_back(&p);
  std::string run;  // "x,y x,y ..." of the current stretch of points on the axis
  size_t runLength = 0;
  auto flush = [&] {
    if (runLength >= 2 && ser.joined)
      s << "<polyline fill=\"none\" stroke=\"" << ser.color << "\" stroke-width=\"2\" points=\""
        << run << "\"/>\n";
    run.clear();
    runLength = 0;
  };
  for (size_t i = 0; i < own.size(); ++i) {
    const Point* p = own[i];
    if (i > 0 && own[i - 1]->index + 1 != p->index) flush();
    if (f.below(*p)) {
      flush();
      continue;
    }
    run += (runLength++ ? " " : "") + num(f.px(p->x)) + "," + num(f.py(p->y));
  }
  flush();
  for (size_t i = 0; i + 1 < own.size() && ser.joined; ++i) {
    const Point *a = own[i], *b = own[i + 1];
    if (a->index + 1 != b->index) continue;
    if (f.below(*a) == f.below(*b)) continue;  // both on the axis: solid; both below: not drawn
    s << "<line x1=\"" << num(f.px(a->x)) << "\" y1=\""
      << num(f.below(*a) ? tipOf(outliers, a, f.bottom) : f.py(a->y)) << "\" x2=\""
      << num(f.px(b->x)) << "\" y2=\""
      << num(f.below(*b) ? tipOf(outliers, b, f.bottom) : f.py(b->y)) << "\" stroke=\"" << ser.color
      << "\" stroke-width=\"1.5\" stroke-dasharray=\"4,3\"/>\n";
  }
  std::vector<std::array<double, 4>> labelBoxes;
  for (const Point* p : own) {
    if (f.below(*p)) continue;
    const bool weak = p->index < ser.weak.size() && ser.weak[p->index];
    s << "<circle" << (weak ? " class=\"weak\"" : "") << " cx=\"" << num(f.px(p->x)) << "\" cy=\""
      << num(f.py(p->y)) << "\" r=\"3.5\" fill=\"" << (weak ? "white" : ser.color) << "\" stroke=\""
      << ser.color << "\"/>\n";
    if (p->index < ser.pointLabels.size() && !ser.pointLabels[p->index].empty()) {
      const std::string& text = ser.pointLabels[p->index];
      const auto [lx, ly] = placePointLabel(labelBoxes, f.px(p->x), f.py(p->y), text);
      s << "<text class=\"point-label\" x=\"" << num(lx) << "\" y=\"" << num(ly)
        << "\" font-size=\"10\" fill=\"" << ser.color << "\">" << svgEscape(text) << "</text>\n";
    }
  }
  const Point* best = d.best[si];
  if (best && !f.below(*best))
    s << "<circle class=\"best\" cx=\"" << num(f.px(best->x)) << "\" cy=\"" << num(f.py(best->y))
      << "\" r=\"7\" fill=\"none\" stroke=\"" << ser.color << "\" stroke-width=\"2\"/>\n";
}

// The outliers' triangles and labels, and a broken-axis mark on the y axis when there are any.
void writeOutliers(std::ostringstream& s, const std::vector<Outlier>& outliers,
                   const std::vector<PlotSeries>& series, const ChartFrame& f) {
  for (const Outlier& u : outliers) {
    const std::string& color = series[u.p->series].color;
    s << "<path class=\"outlier\" d=\"M" << num(u.x - 5) << "," << num(u.tip - 8) << " L"
      << num(u.x + 5) << "," << num(u.tip - 8) << " L" << num(u.x) << "," << num(u.tip)
      << " Z\" fill=\"" << color << "\"/>\n"
      << "<text class=\"outlier-label\" x=\"" << num(u.left ? u.x - 9 : u.x + 9) << "\" y=\""
      << num(u.tip - 3) << "\" font-size=\"" << kMarkFont << "\" fill=\"" << color
      << "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\""
      << (u.left ? " text-anchor=\"end\"" : "") << ">" << svgEscape(u.text) << "</text>\n";
  }
  if (!outliers.empty()) {  // broken-axis mark on the y axis, near the bottom
    const double L = f.L, yb = f.bottom - 12;
    s << "<g class=\"axis-break\"><rect x=\"" << L - 6 << "\" y=\"" << num(yb - 3)
      << "\" width=\"12\" height=\"5\" fill=\"white\"/><path d=\"M" << L - 6 << "," << num(yb)
      << " l12,-4 M" << L - 6 << "," << num(yb + 5) << " l12,-4\" stroke=\"#333\"/></g>\n";
  }
}

void writeLegend(std::ostringstream& s, const std::vector<PlotSeries>& series,
                 const ChartFrame& f) {
  const double L = f.L, pw = f.pw;
  double legendY = f.T + 10;
  for (const auto& ser : series) {
    // A line for a curve, a dot for points only.
    if (ser.joined)
      s << "<line x1=\"" << num(L + pw + 12) << "\" x2=\"" << num(L + pw + 32) << "\" y1=\""
        << num(legendY) << "\" y2=\"" << num(legendY) << "\" stroke=\"" << ser.color
        << "\" stroke-width=\"2\"/>\n";
    else
      s << "<circle class=\"legend-dot\" cx=\"" << num(L + pw + 22) << "\" cy=\"" << num(legendY)
        << "\" r=\"3.5\" fill=\"" << ser.color << "\"/>\n";
    s << "<text x=\"" << num(L + pw + 38) << "\" y=\"" << num(legendY + 4) << "\">"
      << svgEscape(ser.name) << "</text>\n";
    legendY += 20;
  }
}

// The number in attribute `name` of the first tag of `svg` (its root element).
double rootAttribute(const std::string& svg, const std::string& name) {
  const size_t tagEnd = svg.find('>');
  const size_t at = svg.find(" " + name + "=\"");
  FIXRES_CHECK(svg.rfind("<svg ", 0) == 0 && at != std::string::npos && at < tagEnd, InternalError,
               "not a chart document: no ", name, " on its <svg> element");
  return std::strtod(svg.c_str() + at + name.size() + 3, nullptr);
}

}  // namespace

std::string lineChartSvg(const std::vector<PlotSeries>& input, const PlotOptions& o) {
  FIXRES_CHECK(o.width >= 320 && o.height >= 150, UsageError,
               "plot size must be at least 320x150, got ", o.width, "x", o.height);
  FIXRES_CHECK(o.outlierMadFactor > 0, UsageError, "plot outlierMadFactor must be positive, got ",
               o.outlierMadFactor);

  ChartFrame f;
  std::vector<PlotSeries> series = input;
  std::vector<PlotMark> marks = o.marks;
  toAxisUnits(series, marks, f);
  const ChartData d = collectData(series);
  DenseRange dense = denseRange(d.ys, o.clipLowOutliers ? o.outlierMadFactor : 0);
  if (d.ys.empty()) dense.lo = 0, dense.hi = 1;

  // The right margin holds the legend: its longest name (12 px text after a 38 px key) fits.
  // (At most 45 % of the width: a longer name is cut rather than the plot squeezed away.)
  for (const auto& ser : series)
    f.R = std::min(std::max(f.R, 38 + textWidth(ser.name, 12) + 10), 0.45 * o.width);
  // The label band above the plot depends on the x scale only.
  f.pw = o.width - f.L - f.R;
  f.xt = xTicksFor(d, marks, f.pw, o);
  // Generated labels print y values to a tenth of the order of magnitude of the y span, at
  // least one decimal: 88.4 for a 2-point span, 0.8812 for 0.881..0.889.
  const double ySpan = dense.hi - dense.lo;
  const int valueDecimals =
      ySpan > 0 ? std::clamp(1 - static_cast<int>(std::floor(std::log10(ySpan))), 1, 9) : 1;
  const std::vector<PlotMark> bestMarks = bestMarksOf(series, d, valueDecimals, f, o);
  const std::vector<PlacedMark> placed = placeMarks(marks, bestMarks, f, o.width);
  fitHeight(f, placed, dense, o);

  std::ostringstream s;
  writeFrame(s, f, o);
  writeMarks(s, placed, f);
  const std::vector<Outlier> outliers = placeOutliers(d, f, valueDecimals, o);
  for (size_t si = 0; si < series.size(); ++si) writeSeries(s, series[si], si, d, f, outliers);
  writeOutliers(s, outliers, series, f);
  writeLegend(s, series, f);
  s << "</svg>\n";
  return s.str();
}

std::string stackedSvg(const std::vector<std::string>& charts) {
  double width = 0, height = 0;
  std::string inner;
  for (const std::string& chart : charts) {
    width = std::max(width, rootAttribute(chart, "width"));
    inner += "<svg x=\"0\" y=\"" + num(height) + "\" " + chart.substr(5);
    height += rootAttribute(chart, "height");
  }
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
         num(height) + "\">\n" + inner + "</svg>\n";
}

}  // namespace fixres
