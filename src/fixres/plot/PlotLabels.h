// The label layout of a line chart (SvgPlot.h, "Marks"): label widths, and the rows above the
// plot that keep mark labels from overlapping one another or crossing a mark line. Used by
// SvgPlot.cpp, which also places its outlier labels with these extents.
#pragma once

#include <string>
#include <vector>

#include "fixres/plot/SvgPlot.h"  // PlotMark

namespace fixres::plot {

constexpr double kMarkFont = 11;  // px, mark and outlier labels
constexpr double kMarkRowH = 14;  // px between stacked mark label rows

// The width in px of s at fontSize, estimated at 0.6 em per UTF-8 code point.
double textWidth(const std::string& s, double fontSize);

struct Interval {
  double lo = 0, hi = 0;
  bool overlaps(const Interval& o, double gap) const { return lo < o.hi + gap && o.lo < hi + gap; }
  bool contains(double x, double margin) const { return x > lo - margin && x < hi + margin; }
};

struct PlacedMark {
  const PlotMark* mark;
  double px;       // line position
  int row = 0;     // 0 = the row right above the plot
  Interval box{};  // label extent in px
  bool left = false;
};

// Stacks mark labels in rows above the plot (see PlotLabels.cpp), in a picture `width` px wide;
// the marks come back ordered right to left.
std::vector<PlacedMark> placeMarkLabels(std::vector<PlacedMark> marks, double width);

}  // namespace fixres::plot
