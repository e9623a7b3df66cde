// The value grid (GridSvg.h).
#include "fixres/plot/GridSvg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "fixres/common/Error.h"
#include "fixres/plot/HeatMapSvg.h"
#include "fixres/plot/PlotLabels.h"
#include "fixres/plot/SvgPlot.h"

namespace fixres {
namespace {

constexpr int kCellW = 64, kCellH = 32, kFont = 12, kTitleFont = 14;
using plot::textWidth;  // label widths estimated as the line charts estimate them

std::string gridFixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

struct Layout {
  size_t rows = 0, cols = 0;
  double left = 0, top = 0, width = 0, height = 0;
  double x(size_t c) const { return left + static_cast<double>(c * kCellW); }
  double y(size_t r) const { return top + static_cast<double>(r * kCellH); }
};

// "colours: 82.1 or less (lightest) to 88.0 (darkest)": the scale of the cells.
std::string legendText(const ColourRange& r) {
  return "colours: " + gridFixed(r.lo, 1) + (r.clipped ? " or less" : "") + " (lightest) to " +
         gridFixed(r.hi, 1) + " (darkest)";
}

Layout layoutOf(const GridSvgOptions& o, double legendWidth) {
  Layout l;
  l.rows = o.rowNames.size();
  l.cols = o.columnNames.size();
  double rowLabels = textWidth(o.rowTitle, kFont);
  for (const auto& n : o.rowNames) rowLabels = std::max(rowLabels, textWidth(n, kFont));
  l.left = 16 + rowLabels + 10;
  l.top = 16 + kTitleFont + 10 + kFont + 8 + kFont + 6;  // title, column title, column names
  const double gridW = l.left + static_cast<double>(l.cols * kCellW) + 16;
  double notes = 0;
  notes = 32 + std::max({textWidth(o.title, kTitleFont), textWidth(o.markNote, kFont),
                         textWidth("hatched: " + o.ruledOutNote, kFont), legendWidth});
  l.width = std::max({gridW, notes, 320.0});
  l.height = l.y(l.rows) + 12 + 3.0 * (kFont + 6) + 8;
  return l;
}

void writeLabels(std::ostringstream& s, const Layout& l, const GridSvgOptions& o) {
  s << "<text x=\"16\" y=\"" << 16 + kTitleFont << "\" font-size=\"" << kTitleFont
    << "\" font-weight=\"bold\">" << svgEscape(o.title) << "</text>\n";
  const double colTitleY = 16 + kTitleFont + 10 + kFont;
  s << "<text x=\"" << l.x(0) << "\" y=\"" << colTitleY << "\" font-size=\"" << kFont << "\">"
    << svgEscape(o.columnTitle) << "</text>\n";
  s << "<text x=\"16\" y=\"" << colTitleY << "\" font-size=\"" << kFont << "\">"
    << svgEscape(o.rowTitle) << "</text>\n";
  for (size_t c = 0; c < l.cols; ++c)
    s << "<text class=\"column-label\" x=\"" << l.x(c) + kCellW / 2.0 << "\" y=\"" << l.top - 6
      << "\" font-size=\"" << kFont << "\" text-anchor=\"middle\">" << svgEscape(o.columnNames[c])
      << "</text>\n";
  for (size_t r = 0; r < l.rows; ++r)
    s << "<text class=\"row-label\" x=\"" << l.left - 10 << "\" y=\"" << l.y(r) + kCellH / 2.0 + 4
      << "\" font-size=\"" << kFont << "\" text-anchor=\"end\">" << svgEscape(o.rowNames[r])
      << "</text>\n";
}

}  // namespace

ColourRange colourRange(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  ColourRange r;
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  // The q-quantile interpolated between order statistics (numpy's default, "linear").
  const auto quantile = [&v](double q) {
    const double at = q * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(std::floor(at));
    const double f = at - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] + f * (v[i + 1] - v[i]) : v[i];
  };
  const double q1 = quantile(0.25), q3 = quantile(0.75);
  r.hi = v.back();
  r.lo = std::max(v.front(), q1 - 1.5 * (q3 - q1));
  r.clipped = v.front() < r.lo;
  return r;
}

namespace {

void writeCells(std::ostringstream& s, const Layout& l, const std::vector<double>& v,
                const GridSvgOptions& o) {
  const ColourRange range = colourRange(v);
  const double lo = range.lo, hi = range.hi;
  for (size_t r = 0; r < l.rows; ++r)
    for (size_t c = 0; c < l.cols; ++c) {
      const double x = v[r * l.cols + c];
      const bool has = std::isfinite(x);
      const double t = !has ? 0 : hi > lo ? std::max(0.0, (x - lo) / (hi - lo)) : 0.5;
      s << "<rect class=\"cell\" data-row=\"" << r << "\" data-column=\"" << c << "\" data-value=\""
        << (has ? gridFixed(x, 4) : "nan") << "\" x=\"" << l.x(c) << "\" y=\"" << l.y(r)
        << "\" width=\"" << kCellW << "\" height=\"" << kCellH << "\" fill=\""
        << (has ? heatColor(t * t) : "#ffffff") << "\" stroke=\"#cccccc\"><title>"
        << svgEscape(o.rowNames[r] + ", " + o.columnNames[c]) << ": "
        << (has ? gridFixed(x, 2) : "n/a") << "</title></rect>\n";
      s << "<text class=\"cell-text\" x=\"" << l.x(c) + kCellW / 2.0 << "\" y=\""
        << l.y(r) + kCellH / 2.0 + 4 << "\" font-size=\"" << kFont
        << "\" text-anchor=\"middle\" fill=\"" << (t > 0.55 ? "#ffffff" : "#000000") << "\">"
        << (has ? gridFixed(x, 1) : "n/a") << "</text>\n";
    }
}

// Hatching over ruled-out cells and the boundary between allowed and ruled-out neighbours.
void writeBudget(std::ostringstream& s, const Layout& l, const GridSvgOptions& o) {
  if (o.allowed.empty()) return;
  const auto ok = [&](size_t r, size_t c) { return static_cast<bool>(o.allowed[r * l.cols + c]); };
  for (size_t r = 0; r < l.rows; ++r)
    for (size_t c = 0; c < l.cols; ++c) {
      if (ok(r, c)) continue;
      s << "<rect class=\"over-budget\" data-row=\"" << r << "\" data-column=\"" << c << "\" x=\""
        << l.x(c) << "\" y=\"" << l.y(r) << "\" width=\"" << kCellW << "\" height=\"" << kCellH
        << "\" fill=\"url(#ruled-out)\"/>\n";
    }
  const auto edge = [&](double x1, double y1, double x2, double y2) {
    s << "<line class=\"budget-edge\" x1=\"" << x1 << "\" y1=\"" << y1 << "\" x2=\"" << x2
      << "\" y2=\"" << y2 << "\" stroke=\"#222222\" stroke-width=\"3\"/>\n";
  };
  for (size_t r = 0; r < l.rows; ++r)
    for (size_t c = 0; c < l.cols; ++c) {
      if (c + 1 < l.cols && ok(r, c) != ok(r, c + 1))
        edge(l.x(c + 1), l.y(r), l.x(c + 1), l.y(r + 1));
      if (r + 1 < l.rows && ok(r, c) != ok(r + 1, c))
        edge(l.x(c), l.y(r + 1), l.x(c + 1), l.y(r + 1));
    }
}

}  // namespace

std::string valueGridSvg(const std::vector<double>& values, const GridSvgOptions& o) {
  const size_t rows = o.rowNames.size(), cols = o.columnNames.size();
  FIXRES_CHECK(rows > 0 && cols > 0 && values.size() == rows * cols, UsageError,
               "value grid: ", values.size(), " values for ", rows, " x ", cols, " cells");
  FIXRES_CHECK(o.allowed.empty() || o.allowed.size() == values.size(), UsageError,
               "value grid: ", o.allowed.size(), " budget flags for ", values.size(), " cells");
  const bool marked = o.markedRow >= 0 || o.markedColumn >= 0;
  FIXRES_CHECK(!marked || (o.markedRow >= 0 && static_cast<size_t>(o.markedRow) < rows &&
                           o.markedColumn >= 0 && static_cast<size_t>(o.markedColumn) < cols),
               UsageError, "value grid: the marked cell ", o.markedRow, ",", o.markedColumn,
               " is outside ", rows, " x ", cols);
  const ColourRange range = colourRange(values);
  const std::string legend = std::isfinite(range.lo) ? legendText(range) : "";
  const Layout l = layoutOf(o, textWidth(legend, kFont));
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << l.width << "\" height=\"" << l.height
    << "\" font-family=\"sans-serif\">\n"
    << "<defs><pattern id=\"ruled-out\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#bbbbbb\" "
       "fill-opacity=\"0.55\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#555555\" "
       "stroke-width=\"1.5\"/></pattern></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  writeLabels(s, l, o);
  writeCells(s, l, values, o);
  writeBudget(s, l, o);
  double noteY = l.y(rows) + 12 + kFont;
  if (marked) {
    s << "<rect class=\"marked\" data-row=\"" << o.markedRow << "\" data-column=\""
      << o.markedColumn << "\" x=\"" << l.x(o.markedColumn) + 1.5 << "\" y=\""
      << l.y(o.markedRow) + 1.5 << "\" width=\"" << kCellW - 3 << "\" height=\"" << kCellH - 3
      << "\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"3\"/>\n";
    s << "<text class=\"note\" x=\"16\" y=\"" << noteY << "\" font-size=\"" << kFont
      << "\" fill=\"#2ca02c\">" << svgEscape(o.markNote) << "</text>\n";
    noteY += kFont + 6;
  }
  if (std::count(o.allowed.begin(), o.allowed.end(), false) > 0) {
    s << "<text class=\"note\" x=\"16\" y=\"" << noteY << "\" font-size=\"" << kFont
      << "\">hatched: " << svgEscape(o.ruledOutNote) << "</text>\n";
    noteY += kFont + 6;
  }
  if (!legend.empty())
    s << "<text class=\"legend\" data-lo=\"" << gridFixed(range.lo, 4) << "\" data-hi=\""
      << gridFixed(range.hi, 4) << "\" x=\"16\" y=\"" << noteY << "\" font-size=\"" << kFont
      << "\">" << svgEscape(legend) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace fixres
