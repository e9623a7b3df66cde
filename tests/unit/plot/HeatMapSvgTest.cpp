// The confusion heat map (HeatMapSvg.h), read back through the class attributes and tooltips it
// documents: at 10 classes a cell per non-zero entry, coloured by the share of its row, the names
// escaped; at 1000 classes blocks of 10 classes whose tooltips carry the block sums, the listed
// confusions present, the document bounded.
#include "fixres/plot/HeatMapSvg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres {
namespace {

struct Cell {
  std::string fill;
  int64_t count = 0;
  std::string title;
};

// XML text back to plain text (the four entities the writer uses).
std::string unescape(std::string s) {
  for (const auto& [entity, c] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (size_t at = s.find(entity); at != std::string::npos; at = s.find(entity, at + 1))
      s.replace(at, entity.size(), c);
  }
  return s;
}

// Every cell: its tooltip text (unescaped, without its count) and fill.
std::vector<Cell> cellsOf(const std::string& svg) {
  std::vector<Cell> cells;
  static const std::regex cell(
      "<rect class=\"cell\"[^>]* fill=\"(#[0-9a-f]{6})\"><title>([^<]*): ([0-9]+) \\(");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator();
       ++it)
    cells.push_back({(*it)[1], std::stoll((*it)[3]), unescape((*it)[2])});
  return cells;
}

size_t countOf(const std::string& svg, const std::string& needle) {
  size_t n = 0;
  for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) ++n;
  return n;
}

// The colour rule stated on its own: white to #08306b, linear in the square root of the share.
std::string expectedColor(double share) {
  const double t = std::sqrt(share);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(255 - 247 * t)),
                static_cast<int>(std::lround(255 - 207 * t)),
                static_cast<int>(std::lround(255 - 148 * t)));
  return buf;
}

TEST(HeatMapSvg, ColorIsLinearInTheSquareRootOfTheShare) {
  EXPECT_EQ(heatColor(0), "#ffffff");
  EXPECT_EQ(heatColor(1), "#08306b");
  EXPECT_EQ(heatColor(0.25), expectedColor(0.25));  // half way: sqrt(0.25)
  EXPECT_EQ(heatColor(0.01), expectedColor(0.01));
  EXPECT_EQ(heatColor(-1), "#ffffff");
  EXPECT_EQ(heatColor(7), "#08306b");
}

TEST(HeatMapSvg, TenClassesHaveACellPerNonZeroEntryColouredByTheRowShare) {
  const size_t n = 10;
  std::vector<int64_t> counts(n * n, 0);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back("class " + std::to_string(i));
    counts[i * n + i] = 40 + static_cast<int64_t>(i);
    counts[i * n + (i + 1) % n] = static_cast<int64_t>(i);  // row 0 has none
  }
  names[3] = "cats & <dogs>";
  HeatMapOptions o;
  o.title = "ten";
  o.notes = {"class 9 -> class 0: 9 (18.4 %)"};
  const std::string svg = confusionHeatMapSvg(counts, names, o);
  const auto cells = cellsOf(svg);
  ASSERT_EQ(cells.size(), 19u);  // 10 diagonal + 9 off-diagonal
  std::map<std::string, const Cell*> byTitle;
  for (const auto& c : cells) byTitle[c.title] = &c;
  for (size_t i = 0; i < n; ++i) {
    const double row = 40.0 + 2.0 * static_cast<double>(i);
    const std::string key = names[i] + " -> " + names[i];
    ASSERT_TRUE(byTitle.count(key)) << key;
    EXPECT_EQ(byTitle[key]->count, 40 + static_cast<int64_t>(i));
    EXPECT_EQ(byTitle[key]->fill, expectedColor((40.0 + static_cast<double>(i)) / row)) << key;
  }
  EXPECT_EQ(countOf(svg, "class=\"row-label\""), n);
  EXPECT_EQ(countOf(svg, "class=\"column-label\""), n);
  EXPECT_NE(svg.find(">cats &amp; &lt;dogs&gt;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<dogs>"), std::string::npos);
  EXPECT_NE(svg.find("class 9 -&gt; class 0: 9 (18.4 %)"), std::string::npos);
  EXPECT_EQ(countOf(svg, "class=\"note\""), 2u);  // the notes' title and the line
}

TEST(HeatMapSvg, AThousandClassesAreGroupedIntoBlocksOfTen) {
  const size_t n = 1000;
  std::vector<int64_t> counts(n * n, 0);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back("n" + std::to_string(1000000 + i));
    counts[i * n + i] = 45;
    counts[i * n + (i * 7) % n] += 5;  // a scattered confusion per class
  }
  HeatMapOptions o;
  for (int k = 0; k < 20; ++k) o.notes.push_back("n" + std::to_string(k) + " -> x: 5 (10.0 %)");
  const std::string svg = confusionHeatMapSvg(counts, names, o);
  // The block sums, computed here: block (I, J) holds rows 10I..10I+9 and columns 10J..10J+9.
  std::map<std::pair<size_t, size_t>, int64_t> blocks;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (counts[i * n + j] > 0) blocks[{i / 10, j / 10}] += counts[i * n + j];
  const auto cells = cellsOf(svg);
  ASSERT_EQ(cells.size(), blocks.size());
  ASSERT_LE(cells.size(), 100u * 100u);
  std::map<std::string, int64_t> byTitle;
  for (const auto& c : cells) byTitle[c.title] = c.count;
  for (const auto& [ij, sum] : blocks) {
    const auto name = [](size_t b) {
      return "classes " + std::to_string(b * 10) + "-" + std::to_string(b * 10 + 9);
    };
    const std::string key = name(ij.first) + " -> " + name(ij.second);
    ASSERT_TRUE(byTitle.count(key)) << key;
    EXPECT_EQ(byTitle[key], sum) << key;
  }
  EXPECT_NE(svg.find("(blocks of 10 classes)"), std::string::npos);
  EXPECT_EQ(countOf(svg, "class=\"note\""), 21u);
  // Axis labels thinned so that they do not overlap: 6 px blocks, every third one labelled.
  EXPECT_EQ(countOf(svg, "class=\"row-label\""), 34u);
  EXPECT_LT(svg.size(), 2u << 20);
}

TEST(HeatMapSvg, BadShapesAreUsageErrors) {
  EXPECT_THROW(confusionHeatMapSvg({1, 2, 3}, {"a", "b"}, {}), UsageError);
  EXPECT_THROW(confusionHeatMapSvg({}, {}, {}), UsageError);
  EXPECT_THROW(confusionHeatMapSvg({1, -1, 0, 1}, {"a", "b"}, {}), UsageError);
  HeatMapOptions o;
  o.maxCells = 1;
  EXPECT_THROW(confusionHeatMapSvg({1, 0, 0, 1}, {"a", "b"}, o), UsageError);
}

}  // namespace
}  // namespace fixres
