// A table of values drawn as an SVG heat map: what `fixres sweep` draws for its test sizes
// (columns) and crop fractions (rows), one panel per evaluation (without and with fine-tuning).
//
// Each cell holds its value as text (one decimal, the unit in the title) on a fill from white to
// dark blue (plot/HeatMapSvg.h's heatColor) by its place between the panel's lowest and
// highest finite value, so the best cells of a panel are the darkest whatever the spread. A cell
// with no value (NaN) is drawn empty with "n/a". Cells a budget rules out are hatched grey, and
// a thick line runs between every allowed cell and a ruled-out neighbour: the budget's boundary.
// One cell may be marked (a green frame) with a note under the grid.
//
// Elements carry a `class` attribute ("cell" with data-row, data-column and data-value;
// "cell-text", "row-label", "column-label", "over-budget", "budget-edge", "marked", "note") for
// tests and scripts. The output is deterministic.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace fixres {

struct GridSvgOptions {
  std::string title, rowTitle, columnTitle;
  std::vector<std::string> rowNames, columnNames;
  // rows x columns, row-major: false where a budget rules the cell out (empty: none is).
  std::vector<bool> allowed;
  std::string ruledOutNote = "outside the budget";
  int markedRow = -1, markedColumn = -1;  // -1: no cell marked
  std::string markNote;                   // written under the grid when a cell is marked
};

// The values the colours span: from the lower Tukey fence (Q1 - 1.5 IQR, quantiles interpolated
// as numpy's default) or the lowest value if higher, to the highest. Values under it (an outlier
// such as a size far off the train size) all get the lightest colour, so the colours tell apart
// the cells that decide; `clipped` says some did. NaN: ignored; lo = hi = NaN when none is finite.
struct ColourRange {
  double lo = NAN, hi = NAN;
  bool clipped = false;
};
ColourRange colourRange(const std::vector<double>& values);

// `values`: rows x columns, row-major (rows = rowNames.size()). The cells are coloured over
// colourRange(values), written under the grid as a legend. UsageError when the sizes
// disagree, there is no row or column, or the marked cell is outside the grid.
std::string valueGridSvg(const std::vector<double>& values, const GridSvgOptions& options);

}  // namespace fixres
