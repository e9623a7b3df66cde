// A confusion matrix drawn as an SVG heat map (what `fixres eval --report` writes), readable at
// 10 classes and at 1000.
//
// Each cell is the share of its row's images (a true class's) predicted as its column's class,
// so that a small class's errors show as much as a large one's. The colour goes from white (0)
// to dark blue (1) with the square root of the share: a 1 % confusion is already a tenth of the
// way, which keeps off-diagonal errors visible beside a diagonal near 100 %. The colour bar
// beside the matrix is labelled in shares (0, 1 %, 10 %, 25 %, 50 %, 100 %).
//
// Up to `maxCells` classes every class has its own cell, named on both axes (names longer than
// 24 characters are cut with "..."), with its count written inside when the cell is large enough
// (24 px). More classes are grouped: g = ceil(n / maxCells) consecutive classes per block, a
// block's share being its images over its rows' images, and the axes name the blocks by class
// index range ("100-109"). Axis labels that would overlap are thinned to every k-th. The notes
// (the top confusions, listed by the caller) stand to the right of the colour bar, so that at
// 1000 classes the names of the worst pairs are still there to read. Every drawn cell carries a
// <title> (a tooltip: "true -> predicted: count (share)"); cells with no image are not drawn.
//
// Elements carry a `class` attribute ("cell", "row-label", "column-label", "note", "colorbar")
// for tests and scripts. The output is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fixres {

struct HeatMapOptions {
  std::string title;
  std::string rowLabel = "true class", columnLabel = "predicted class";
  std::string notesTitle = "top confusions";
  std::vector<std::string> notes;  // one line each, listed beside the matrix
  int maxCells = 100;              // per side: more classes are grouped into blocks
};

// `counts`: n x n, row-major (row: true class, column: predicted class); `names`: n. UsageError
// when the sizes disagree, n is 0, a count is negative or maxCells < 2.
std::string confusionHeatMapSvg(const std::vector<int64_t>& counts,
                                const std::vector<std::string>& names,
                                const HeatMapOptions& options);

// The fill of a cell holding `share` (clamped to [0, 1]): "#rrggbb" between #ffffff and #08306b,
// linear in sqrt(share).
std::string heatColor(double share);

}  // namespace fixres
