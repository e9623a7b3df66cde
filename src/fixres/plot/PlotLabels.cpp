// Mark label rows above a line chart (PlotLabels.h).
#include "fixres/plot/PlotLabels.h"

#include <algorithm>

namespace fixres::plot {
namespace {

constexpr double kLabelGap = 8;     // px kept free between two labels in one row
constexpr double kCharWidth = 0.6;  // em, a generous average glyph width for sans-serif

}  // namespace

double textWidth(const std::string& s, double fontSize) {
  size_t glyphs = 0;
  for (unsigned char c : s) glyphs += (c & 0xC0) != 0x80;  // UTF-8 code points
  return static_cast<double>(glyphs) * kCharWidth * fontSize;
}

// Stacks mark labels in rows above the plot. A label sits right of its line, or left of it when
// that covers no line still to be placed. A placement is valid when the label does not overlap
// another label of its row, the mark's line (which runs up through the rows below its own) does
// not cross a label, and the label does not cover a line that runs through its row. Marks are
// placed right to left, so no label placed earlier covers a line placed later, and a row one
// above everything placed so far is valid for any label that fits in the picture.
std::vector<PlacedMark> placeMarkLabels(std::vector<PlacedMark> marks, double width) {
  std::stable_sort(marks.begin(), marks.end(),
                   [](const PlacedMark& a, const PlacedMark& b) { return a.px > b.px; });
  std::vector<PlacedMark> placed;
  for (size_t i = 0; i < marks.size(); ++i) {
    PlacedMark m = marks[i];
    const double w = textWidth(m.mark->label, kMarkFont);
    const Interval right{m.px + 4, m.px + 4 + w}, left{m.px - 4 - w, m.px - 4};
    auto valid = [&](const Interval& box, int row) {
      if (box.lo < 2 || box.hi > width - 2) return false;
      for (size_t j = i + 1; j < marks.size(); ++j)
        if (box.contains(marks[j].px, 2)) return false;
      for (const PlacedMark& p : placed) {
        if (p.row == row && p.box.overlaps(box, kLabelGap)) return false;
        if (p.row < row && p.box.contains(m.px, 2)) return false;
        if (p.row > row && box.contains(p.px, 2)) return false;
      }
      return true;
    };
    int top = 0;
    for (const PlacedMark& p : placed) top = std::max(top, p.row + 1);
    bool done = false;
    for (int row = 0; row <= top && !done; ++row) {
      for (bool useLeft : {false, true}) {
        const Interval& box = useLeft ? left : right;
        if (valid(box, row)) {
          m.row = row, m.box = box, m.left = useLeft, done = true;
          break;
        }
      }
    }
    if (!done) {  // too long for the picture on either side: keep it readable, on a row of its own
      m.row = top, m.left = m.px > width / 2, m.box = m.left ? left : right;
    }
    placed.push_back(m);
  }
  return placed;
}

}  // namespace fixres::plot
