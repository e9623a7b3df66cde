// The confusion heat map (HeatMapSvg.h).
#include "fixres/plot/HeatMapSvg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "fixres/common/Error.h"
#include "fixres/plot/SvgPlot.h"

namespace fixres {
namespace {

constexpr double kCharWidth = 0.6;  // em per character, as SvgPlot estimates label widths
constexpr int kLabelFont = 11;
constexpr int kNoteFont = 11;
constexpr int kNoteLine = 15;
constexpr size_t kNameChars = 24;
constexpr int kMinCell = 6, kMaxCell = 48, kMatrixSide = 600;

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

size_t glyphs(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `chars` code points of s, "..." replacing the rest when it is longer.
std::string cut(const std::string& s, size_t chars) {
  if (glyphs(s) <= chars) return s;
  size_t kept = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && kept++ == chars - 3) break;
  }
  return s.substr(0, i) + "...";
}

double textWidth(const std::string& s, int font) {
  return static_cast<double>(glyphs(s)) * kCharWidth * font;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, share >= 0.1 || share == 0 ? "%.1f %%" : "%.2f %%", 100 * share);
  return buf;
}

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string heatColor(double share) {
  const double t = std::sqrt(std::clamp(share, 0.0, 1.0));
  const int lo[3] = {255, 255, 255}, hi[3] = {8, 48, 107};
  char buf[8];
  int c[3];
  for (int k = 0; k < 3; ++k) c[k] = static_cast<int>(std::lround(lo[k] + (hi[k] - lo[k]) * t));
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

namespace {

// The matrix in blocks of g consecutive classes, m a side: each block's count and each block
// row's total, and the names the axes and the tooltips give a block.
struct HeatBlocks {
  const std::vector<std::string>* names = nullptr;
  size_t n = 0, g = 1, m = 0;
  std::vector<double> count, rowTotal;

  std::string name(size_t b) const {
    if (g == 1) return cut((*names)[b], kNameChars);
    return std::to_string(b * g) + "-" + std::to_string(std::min(n, (b + 1) * g) - 1);
  }
  std::string title(size_t b) const {
    if (g == 1) return (*names)[b];
    return "classes " + name(b);
  }
};

HeatBlocks groupBlocks(const std::vector<int64_t>& counts, const std::vector<std::string>& names,
                       int maxCells) {
  HeatBlocks k;
  k.names = &names;
  k.n = names.size();
  k.g = (k.n + maxCells - 1) / maxCells;
  k.m = (k.n + k.g - 1) / k.g;
  k.count.assign(k.m * k.m, 0);
  k.rowTotal.assign(k.m, 0);
  for (size_t i = 0; i < k.n; ++i) {
    for (size_t j = 0; j < k.n; ++j) {
      k.count[(i / k.g) * k.m + j / k.g] += static_cast<double>(counts[i * k.n + j]);
      k.rowTotal[i / k.g] += static_cast<double>(counts[i * k.n + j]);
    }
  }
  return k;
}

// Where everything goes, in px: the matrix (cells of `cell` px, `side` a side, at left, top), the
// colour bar beside it, the notes right of the bar, and the picture's size.
struct HeatLayout {
  int cell = 0;
  double side = 0;
  size_t every = 1;  // every k-th block is labelled
  double left = 0, top = 0;
  double barX = 0, barW = 12, barH = 0;
  double notesX = 0, width = 0, height = 0;
};

HeatLayout layoutHeatMap(const HeatBlocks& k, const HeatMapOptions& o) {
  HeatLayout l;
  l.cell = std::clamp(kMatrixSide / static_cast<int>(k.m), kMinCell, kMaxCell);
  l.side = static_cast<double>(l.cell) * static_cast<double>(k.m);
  // Every k-th block is labelled, so that labels 2 px apart at least do not overlap.
  l.every = static_cast<size_t>(std::ceil((kLabelFont + 2.0) / l.cell));
  double labelWidth = 0;
  for (size_t b = 0; b < k.m; b += l.every)
    labelWidth = std::max(labelWidth, textWidth(k.name(b), kLabelFont));

  l.left = 28 + labelWidth + 8;              // axis title, labels, gap
  l.top = 36 + 18 + labelWidth * 0.866 + 8;  // title, axis title, rotated labels
  l.barX = l.left + l.side + 24;
  l.barH = std::max(l.side, 120.0);
  double notesWidth = textWidth(o.notesTitle, kNoteFont);
  for (const auto& line : o.notes) notesWidth = std::max(notesWidth, textWidth(line, kNoteFont));
  l.notesX = l.barX + l.barW + 56;
  l.width = l.notesX + (o.notes.empty() ? 0 : notesWidth + 16);
  l.height = std::max(l.top + l.barH + 24, l.top + kNoteLine * (o.notes.size() + 2.0));
  return l;
}

// The document's start, the background, the title and both axis titles.
void writeHeatTitles(std::ostringstream& s, const HeatBlocks& k, const HeatLayout& l,
                     const HeatMapOptions& o) {
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << std::ceil(l.width) << "\" height=\""
    << std::ceil(l.height) << "\" viewBox=\"0 0 " << std::ceil(l.width) << " "
    << std::ceil(l.height) << "\" font-family=\"sans-serif\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << px(l.width / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << svgEscape(o.title) << "</text>\n";
  s << "<text x=\"" << px(l.left + l.side / 2)
    << "\" y=\"48\" text-anchor=\"middle\" font-size=\"12\">"
    << svgEscape(o.columnLabel +
                 (k.g > 1 ? " (blocks of " + std::to_string(k.g) + " classes)" : ""))
    << "</text>\n";
  s << "<text transform=\"translate(16 " << px(l.top + l.side / 2)
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << svgEscape(o.rowLabel)
    << "</text>\n";
}

// The matrix frame and its cells: a tooltip each, the count inside when cells are large enough.
void writeHeatCells(std::ostringstream& s, const HeatBlocks& k, const HeatLayout& l) {
  const double left = l.left, top = l.top;
  const int cell = l.cell;
  s << "<rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(l.side)
    << "\" height=\"" << px(l.side) << "\" fill=\"white\" stroke=\"#999999\"/>\n";
  const bool writeCounts = k.g == 1 && cell >= 24;
  for (size_t i = 0; i < k.m; ++i) {
    for (size_t j = 0; j < k.m; ++j) {
      const double count = k.count[i * k.m + j];
      if (count == 0) continue;
      const double share = k.rowTotal[i] > 0 ? count / k.rowTotal[i] : 0;
      const double x = left + static_cast<double>(j * cell),
                   y = top + static_cast<double>(i * cell);
      s << "<rect class=\"cell\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << cell
        << "\" height=\"" << cell << "\" fill=\"" << heatColor(share) << "\"><title>"
        << svgEscape(k.title(i) + " -> " + k.title(j)) << ": " << static_cast<int64_t>(count)
        << " (" << percent(share) << ")</title></rect>\n";
      if (writeCounts) {
        s << "<text x=\"" << px(x + cell / 2.0) << "\" y=\"" << px(y + cell / 2.0 + 4)
          << "\" text-anchor=\"middle\" font-size=\"" << std::min(12, cell * 2 / 5) << "\" fill=\""
          << (std::sqrt(share) > 0.6 ? "white" : "black") << "\">" << static_cast<int64_t>(count)
          << "</text>\n";
      }
    }
  }
}

// Axis labels: rows on the left, columns above, rotated.
void writeHeatAxisLabels(std::ostringstream& s, const HeatBlocks& k, const HeatLayout& l) {
  for (size_t b = 0; b < k.m; b += l.every) {
    const double c = static_cast<double>(b * l.cell) + l.cell / 2.0;
    const std::string label = svgEscape(k.name(b));
    s << "<text class=\"row-label\" x=\"" << px(l.left - 4) << "\" y=\"" << px(l.top + c + 4)
      << "\" text-anchor=\"end\" font-size=\"" << kLabelFont << "\">" << label << "</text>\n";
    s << "<text class=\"column-label\" transform=\"translate(" << px(l.left + c + 4) << " "
      << px(l.top - 4) << ") rotate(-60)\" font-size=\"" << kLabelFont << "\">" << label
      << "</text>\n";
  }
}

// The colour bar: the gradient is linear in sqrt(share), as the cells are.
void writeColorBar(std::ostringstream& s, const HeatLayout& l) {
  const double barX = l.barX, barW = l.barW, barH = l.barH, top = l.top;
  s << "<defs><linearGradient id=\"heat\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"
    << "<stop offset=\"0\" stop-color=\"" << heatColor(0) << "\"/><stop offset=\"1\" stop-color=\""
    << heatColor(1) << "\"/></linearGradient></defs>\n";
  s << "<rect class=\"colorbar\" x=\"" << px(barX) << "\" y=\"" << px(top) << "\" width=\"" << barW
    << "\" height=\"" << px(barH) << "\" fill=\"url(#heat)\" stroke=\"#999999\"/>\n";
  for (double share : {0.0, 0.01, 0.1, 0.25, 0.5, 1.0}) {
    const double y = top + barH * (1 - std::sqrt(share));
    s << "<line x1=\"" << px(barX + barW) << "\" y1=\"" << px(y) << "\" x2=\""
      << px(barX + barW + 4) << "\" y2=\"" << px(y) << "\" stroke=\"#333333\"/>";
    s << "<text x=\"" << px(barX + barW + 6) << "\" y=\"" << px(y + 4) << "\" font-size=\"10\">"
      << shortNumber(100 * share) << " %</text>\n";
  }
  s << "<text x=\"" << px(barX) << "\" y=\"" << px(top - 8)
    << "\" font-size=\"10\">share of row</text>\n";
}

// The notes, right of the colour bar.
void writeHeatNotes(std::ostringstream& s, const HeatLayout& l, const HeatMapOptions& o) {
  if (o.notes.empty()) return;
  s << "<text class=\"note\" x=\"" << px(l.notesX) << "\" y=\"" << px(l.top + 10)
    << "\" font-size=\"" << kNoteFont << "\" font-weight=\"bold\">" << svgEscape(o.notesTitle)
    << "</text>\n";
  for (size_t k = 0; k < o.notes.size(); ++k) {
    s << "<text class=\"note\" x=\"" << px(l.notesX) << "\" y=\""
      << px(l.top + 10 + kNoteLine * (k + 1.0)) << "\" font-size=\"" << kNoteFont << "\">"
      << svgEscape(o.notes[k]) << "</text>\n";
  }
}

}  // namespace

std::string confusionHeatMapSvg(const std::vector<int64_t>& counts,
                                const std::vector<std::string>& names, const HeatMapOptions& o) {
  const size_t n = names.size();
  FIXRES_CHECK(n > 0 && counts.size() == n * n, UsageError, "a confusion matrix of ", n,
               " classes needs ", n * n, " counts, got ", counts.size());
  FIXRES_CHECK(o.maxCells >= 2, UsageError, "the heat map needs at least 2 cells a side");
  for (int64_t c : counts) FIXRES_CHECK(c >= 0, UsageError, "a negative count in the confusion");

  const HeatBlocks blocks = groupBlocks(counts, names, o.maxCells);
  const HeatLayout layout = layoutHeatMap(blocks, o);
  std::ostringstream s;
  writeHeatTitles(s, blocks, layout, o);
  writeHeatCells(s, blocks, layout);
  writeHeatAxisLabels(s, blocks, layout);
  writeColorBar(s, layout);
  writeHeatNotes(s, layout, o);
  s << "</svg>\n";
  return s.str();
}

}  // namespace fixres
