// The sweep chart: round ticks on both axes, low outliers clipped and annotated, marks drawn with
// labels that do not overlap. The SVG is read back through the class attributes it documents.
#include "fixres/plot/SvgPlot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres {
namespace {

// The nice-number rule, stated independently of the implementation: the step is m * 10^k with
// m in {1, 2, 2.5, 5}.
bool isNiceStep(double step) {
  if (!(step > 0)) return false;
  const double k = std::floor(std::log10(step) + 1e-12);
  const double m = step / std::pow(10.0, k);
  for (double nice : {1.0, 2.0, 2.5, 5.0})
    if (std::fabs(m - nice) < 1e-9 * nice) return true;
  return false;
}

bool isMultiple(double v, double step) {
  const double q = v / step;
  return std::fabs(q - std::round(q)) < 1e-6;
}

// Number of intervals an axis over [lo, hi] needs with the given step, widened to whole steps.
double intervalsWith(double lo, double hi, double step) {
  return std::ceil(hi / step - 1e-9) - std::floor(lo / step + 1e-9);
}

// The nice step just below `step` (5 -> 2.5, 2.5 -> 2, 2 -> 1, 1 -> 0.5).
double niceStepBelow(double step) {
  const double k = std::floor(std::log10(step) + 1e-12);
  const double m = std::round(step / std::pow(10.0, k) * 10) / 10;
  if (m == 5) return 2.5 * std::pow(10.0, k);
  if (m == 2.5) return 2 * std::pow(10.0, k);
  if (m == 2) return std::pow(10.0, k);
  return 5 * std::pow(10.0, k - 1);
}

void expectRoundTicks(const std::vector<double>& ticks, const std::string& what) {
  ASSERT_GE(ticks.size(), 2u) << what;
  const double step = ticks[1] - ticks[0];
  EXPECT_TRUE(isNiceStep(step)) << what << ": step " << step;
  for (size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_TRUE(isMultiple(ticks[i], step)) << what << ": tick " << ticks[i] << " step " << step;
    if (i > 0) {
      EXPECT_NEAR(ticks[i] - ticks[i - 1], step, 1e-9 * step) << what;
    }
  }
}

std::vector<std::string> texts(const std::string& svg, const std::string& cls) {
  std::vector<std::string> out;
  const std::regex re("<text class=\"" + cls + "\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

std::vector<double> numbers(const std::vector<std::string>& strings) {
  std::vector<double> out;
  for (const auto& s : strings) out.push_back(std::stod(s));
  return out;
}

size_t count(const std::string& svg, const std::string& needle) {
  size_t n = 0;
  for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) ++n;
  return n;
}

struct Sweep {
  std::vector<PlotSeries> series;
  PlotOptions options;
};

// The example of a sweep with a failing low resolution.
Sweep sampleSweep() {
  const std::vector<double> xs{16, 24, 32, 40, 48};
  Sweep s;
  s.series = {{"no fine-tuning", xs, {41.0, 88.3, 88.4, 87.9, 86.5}, "#1f77b4", true},
              {"FixRes fine-tuned", xs, {45.0, 88.8, 89.1, 88.9, 88.0}, "#d62728", true}};
  s.options.title = "Top-1 vs test resolution";
  s.options.xLabel = "test resolution (px)";
  s.options.yLabel = "top-1 (%)";
  s.options.xUnit = "px";
  s.options.yUnit = "%";
  s.options.marks = {{24, "train 24", "#555555", MarkStyle::kSolid},
                     {32.7, "suggested 32.7", "#2ca02c", MarkStyle::kDotted}};
  return s;
}

TEST(SvgPlot, NiceTicksAreRoundCoverTheRangeAndUseTheSmallestStep) {
  const std::vector<std::pair<double, double>> ranges = {
      {38.04, 89.1}, {86.5, 89.1}, {16, 48},     {0.0012, 0.0047}, {-3.2, 7.7},
      {0, 1},        {128, 448},   {1e5, 3.3e5}, {0.881, 0.889},   {-250, -13}};
  for (const auto& [lo, hi] : ranges) {
    for (int maxIntervals : {3, 5, 8, 10}) {
      const std::string what = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "] max " +
                               std::to_string(maxIntervals);
      const AxisTicks t = niceTicks(lo, hi, maxIntervals);
      expectRoundTicks(t.values, what);
      EXPECT_NEAR(t.step, t.values[1] - t.values[0], 1e-9 * t.step) << what;
      EXPECT_LE(t.values.front(), lo) << what;
      EXPECT_GE(t.values.back(), hi) << what;
      EXPECT_EQ(t.first, t.values.front()) << what;
      EXPECT_EQ(t.last, t.values.back()) << what;
      EXPECT_LE(static_cast<int>(t.values.size()) - 1, maxIntervals) << what;
      // The next smaller nice step would need too many intervals.
      EXPECT_GT(intervalsWith(lo, hi, niceStepBelow(t.step)), maxIntervals) << what;
    }
  }
}

TEST(SvgPlot, IntegerStepsForIntegerData) {
  const AxisTicks narrow = niceTicks(15.4, 18.6, 10, /*integerStep=*/true);
  EXPECT_EQ(narrow.step, 1);
  for (double v : narrow.values) EXPECT_EQ(v, std::round(v));
  EXPECT_EQ(niceTicks(15.4, 18.6, 10).step, 0.5);  // without the constraint
  EXPECT_EQ(niceTicks(0, 10, 5, true).step, 2);
  EXPECT_EQ(niceTicks(0, 9, 4, true).step, 5);  // 2.5 is not an integer step
  EXPECT_EQ(niceTicks(0, 90, 4, true).step, 25);
}

// A constant series (a learning rate held at 0.001) gets an axis from 0 to twice its value, not
// [-1, 1] where it looks like 0; steps and epochs (never negative) start at 0, not below.
TEST(SvgPlot, AxesFollowTheData) {
  const AxisTicks lr = niceTicks(0.001, 0.001, 5);
  EXPECT_EQ(lr.first, 0);
  EXPECT_NEAR(lr.last, 0.002, 1e-12);
  const AxisTicks negative = niceTicks(-3, -3, 5);
  EXPECT_EQ(negative.last, 0);
  EXPECT_NEAR(negative.first, -6, 1e-12);
  EXPECT_EQ(niceTicks(0, 0, 4).first, -1);

  PlotSeries steps{"lr", {0, 1000, 2000, 3000, 4000, 5000}, {1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3}};
  PlotOptions o;
  const std::string svg = lineChartSvg({steps}, o);
  const std::vector<double> xt = numbers(texts(svg, "xtick")), yt = numbers(texts(svg, "ytick"));
  ASSERT_FALSE(xt.empty());
  ASSERT_FALSE(yt.empty());
  EXPECT_EQ(xt.front(), 0) << "the step axis starts below 0";
  EXPECT_GE(yt.front(), 0) << "a positive constant drawn from below 0";
  EXPECT_LE(yt.back(), 0.003) << "a constant of 0.001 on an axis to " << yt.back();
}

TEST(SvgPlot, ChartTicksAreRoundOnBothAxes) {
  const Sweep s = sampleSweep();
  const std::string svg = lineChartSvg(s.series, s.options);
  const std::vector<double> xt = numbers(texts(svg, "xtick")), yt = numbers(texts(svg, "ytick"));
  expectRoundTicks(xt, "x");
  expectRoundTicks(yt, "y");
  for (double v : xt) EXPECT_EQ(v, std::round(v)) << "x ticks are whole resolutions";
  EXPECT_LE(xt.front(), 16);
  EXPECT_GE(xt.back(), 48);
  // The old axis printed 38.04, 49.11, ...: make sure such labels are gone.
  for (const std::string& label : texts(svg, "ytick")) {
    const size_t dot = label.find('.');
    if (dot != std::string::npos) {
      EXPECT_LE(label.size() - dot - 1, 2u) << label;
    }
  }
}

TEST(SvgPlot, DenseRangeDropsFarLowOutliersOnly) {
  const DenseRange sweep = denseRange({41.0, 88.3, 88.4, 87.9, 86.5, 45.0, 88.8, 89.1, 88.9, 88.0});
  EXPECT_TRUE(sweep.clipped);
  EXPECT_EQ(sweep.lo, 86.5);
  EXPECT_EQ(sweep.hi, 89.1);

  const DenseRange gentle = denseRange({70, 80, 85, 88, 89, 89.5});  // a curve, not outliers
  EXPECT_FALSE(gentle.clipped);
  EXPECT_EQ(gentle.lo, 70);

  // 4 resolutions x 2 series, both failing at the lowest: a quarter of the values are outliers.
  const DenseRange quarter = denseRange({41.0, 88.3, 88.4, 87.9, 45.0, 88.8, 89.1, 88.9});
  EXPECT_TRUE(quarter.clipped);
  EXPECT_EQ(quarter.lo, 87.9);

  // Below the fence, but the values above spread so much that clipping would gain little.
  const DenseRange spread = denseRange({0, 50, 51, 52, 53, 120});
  EXPECT_FALSE(spread.clipped);
  EXPECT_EQ(spread.lo, 0);

  const DenseRange few = denseRange({10, 88, 89, 90});  // too few values to judge
  EXPECT_FALSE(few.clipped);
  EXPECT_EQ(few.lo, 10);

  const DenseRange nan = denseRange({NAN, 88, 88.5, 89, 89.5, 90, 5});
  EXPECT_TRUE(nan.clipped);
  EXPECT_EQ(nan.lo, 88);
  EXPECT_EQ(nan.hi, 90);

  EXPECT_FALSE(denseRange({}).clipped);
}

TEST(SvgPlot, OutliersAreAnnotatedAndExcludedFromTheYAxis) {
  const Sweep s = sampleSweep();
  const std::string svg = lineChartSvg(s.series, s.options);
  const std::vector<double> yt = numbers(texts(svg, "ytick"));
  ASSERT_FALSE(yt.empty());
  EXPECT_GT(yt.front(), 80) << "the axis starts in the dense region";
  EXPECT_LE(yt.front(), 86.5);
  EXPECT_GE(yt.back(), 89.1);
  EXPECT_EQ(texts(svg, "outlier-label"),
            (std::vector<std::string>{"41.0 % at 16 px", "45.0 % at 16 px"}));
  EXPECT_EQ(count(svg, "class=\"outlier\""), 2u);
  EXPECT_EQ(count(svg, "class=\"axis-break\""), 1u);

  PlotOptions all = s.options;
  all.clipLowOutliers = false;
  const std::string full = lineChartSvg(s.series, all);
  EXPECT_LE(numbers(texts(full, "ytick")).front(), 41);
  EXPECT_TRUE(texts(full, "outlier-label").empty());
  EXPECT_EQ(count(full, "axis-break"), 0u);
}

TEST(SvgPlot, NoOutliersMeansNoAnnotation) {
  Sweep s = sampleSweep();
  s.series[0].y[0] = 84.0;
  s.series[1].y[0] = 85.2;
  const std::string svg = lineChartSvg(s.series, s.options);
  EXPECT_TRUE(texts(svg, "outlier-label").empty());
  EXPECT_EQ(count(svg, "axis-break"), 0u);
  EXPECT_LE(numbers(texts(svg, "ytick")).front(), 84.0);
}

TEST(SvgPlot, MarksAndBestPointsAppear) {
  const Sweep s = sampleSweep();
  const std::string svg = lineChartSvg(s.series, s.options);
  std::vector<std::string> labels = texts(svg, "mark-label");
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, (std::vector<std::string>{"best 32 px (88.4 %)", "best 32 px (89.1 %)",
                                              "suggested 32.7", "train 24"}));
  EXPECT_EQ(count(svg, "<line class=\"mark\""), 4u);
  EXPECT_EQ(count(svg, "class=\"best\""), 2u);

  // Without highlightMax there is no best mark; a mark given only its x and label is drawn,
  // grey and dashed.
  Sweep plain = sampleSweep();
  plain.series.resize(1);
  plain.series[0].highlightMax = false;
  plain.options.marks = {{24, "train 24"}};
  const std::string one = lineChartSvg(plain.series, plain.options);
  EXPECT_EQ(texts(one, "mark-label"), (std::vector<std::string>{"train 24"}));
  EXPECT_EQ(count(one, "<line class=\"mark\""), 1u);
  EXPECT_EQ(count(one, "stroke=\"#666666\" stroke-width=\"1.3\" stroke-dasharray=\"6,4\""), 1u);
  EXPECT_EQ(count(one, "class=\"best\""), 0u);
}

// Label boxes from the SVG, with the width estimate the chart documents (0.6 em per glyph).
struct Box {
  double lo, hi, y;
};
std::vector<Box> markLabelBoxes(const std::string& svg) {
  std::vector<Box> out;
  const std::regex re(
      "<text class=\"mark-label\" x=\"([-0-9.]+)\" y=\"([-0-9.]+)\"[^>]*?( text-anchor=\"end\")?>"
      "([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    const double w = 0.6 * 11 * static_cast<double>((*it)[4].length());
    out.push_back((*it)[3].matched ? Box{x - w, x, y} : Box{x, x + w, y});
  }
  return out;
}

TEST(SvgPlot, MarkLabelsDoNotOverlapEvenWhenMarksCrowd) {
  Sweep s = sampleSweep();
  s.series[0].y[2] = 89.4;  // both series best at 32 px, next to the suggestion at 32.7
  s.options.marks[0] = {30, "train 30", "#555555", MarkStyle::kSolid};
  const std::string svg = lineChartSvg(s.series, s.options);
  const std::vector<Box> boxes = markLabelBoxes(svg);
  ASSERT_EQ(boxes.size(), 4u);
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j)
      if (boxes[i].y == boxes[j].y) {
        EXPECT_TRUE(boxes[i].hi <= boxes[j].lo || boxes[j].hi <= boxes[i].lo)
            << "labels " << i << " and " << j << " overlap";
      }
  // The marks do crowd: they need more than one row.
  double minY = boxes[0].y, maxY = boxes[0].y;
  for (const Box& b : boxes) minY = std::min(minY, b.y), maxY = std::max(maxY, b.y);
  EXPECT_GT(maxY, minY);
}

// A point two series share (the sweep's cells and their Pareto front) is one outlier: one
// triangle, one label.
TEST(SvgPlot, ASharedOutlierIsLabelledOnce) {
  Sweep s = sampleSweep();
  s.series.resize(1);
  PlotSeries copy = s.series[0];
  copy.name = "front";
  s.series.push_back(copy);
  const std::string svg = lineChartSvg(s.series, s.options);
  EXPECT_EQ(texts(svg, "outlier-label"), (std::vector<std::string>{"41.0 % at 16 px"}));
  EXPECT_EQ(count(svg, "class=\"outlier\""), 1u);
}

// Labelled points close together (a sweep's cells at nearly equal speed and top-1): each label
// box (10 px text, 0.6 em a character, as the chart estimates it) clear of the others.
TEST(SvgPlot, PointLabelsOfCrowdedPointsDoNotOverlap) {
  PlotSeries ser{"sizes", {100, 500, 501, 502, 503}, {19.9, 20, 20.01, 20.02, 20.03}};
  ser.pointLabels = {"8 px", "16 px", "24 px", "32 px", "40 px"};
  PlotOptions o;
  o.clipLowOutliers = false;  // every point drawn, the far one too
  const std::string svg = lineChartSvg({ser}, o);
  const std::regex re(
      "<text class=\"point-label\" x=\"([-0-9.]+)\" y=\"([-0-9.]+)\"[^>]*>([^<]*)<");
  struct Label {
    double x0, y0, x1, y1;
  };
  std::vector<Label> boxes;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    boxes.push_back({x, y - 10, x + 6.0 * (*it)[3].str().size(), y});
  }
  ASSERT_EQ(boxes.size(), 5u);
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const Label &a = boxes[i], &b = boxes[j];
      EXPECT_FALSE(a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1)
          << "point labels " << i << " and " << j << " overlap";
    }
}

// A series of points only draws its points (and a dot in the legend), no line; a joined one
// draws its polyline.
TEST(SvgPlot, PointsOnlySeriesDrawNoLine) {
  PlotSeries cells{"cells", {1, 2, 3}, {10, 30, 20}, "#123456"};
  cells.joined = false;
  const std::string alone = lineChartSvg({cells}, PlotOptions{});
  EXPECT_EQ(count(alone, "<polyline"), 0u);
  EXPECT_EQ(count(alone, "class=\"legend-dot\""), 1u);
  EXPECT_EQ(count(alone, "<circle cx="), 3u);  // the points
  cells.joined = true;
  EXPECT_EQ(count(lineChartSvg({cells}, PlotOptions{}), "<polyline"), 1u);
}

TEST(SvgPlot, SingleSeriesAndEmptyInputStillDraw) {
  Sweep s = sampleSweep();
  s.series.resize(1);
  const std::string svg = lineChartSvg(s.series, s.options);
  EXPECT_EQ(texts(svg, "outlier-label"), (std::vector<std::string>{"41.0 % at 16 px"}));
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const std::string empty = lineChartSvg({}, PlotOptions{});
  expectRoundTicks(numbers(texts(empty, "ytick")), "empty y");
}

// Tick labels "<m>e<k>" (or "0") as m * 10^(k - exponent): values in units of 10^exponent, which
// stay finite where the labelled values do not (2e308).
std::vector<double> inUnitsOf(const std::vector<std::string>& labels, int exponent) {
  std::vector<double> out;
  for (const std::string& label : labels) {
    const auto e = label.find('e');
    const double mantissa = std::stod(label.substr(0, e));
    out.push_back(e == std::string::npos
                      ? mantissa
                      : mantissa * std::pow(10.0, std::stoi(label.substr(e + 1)) - exponent));
  }
  return out;
}

// Values up to the largest doubles plot: the ticks are round, cover every value and print short;
// no coordinate overflows.
TEST(SvgPlot, ValuesNearTheLargestDoublePlot) {
  PlotSeries s{"loss", {1, 2, 3, 4}, {1.7e308, -1.7e308, 0, 1e300}, "#1f77b4", true};
  PlotOptions o;
  o.clipLowOutliers = false;
  o.marks = {{2.5, "mark", "#555555", MarkStyle::kSolid}};
  std::string svg;
  ASSERT_NO_THROW(svg = lineChartSvg({s}, o));
  const std::vector<double> yt = inUnitsOf(texts(svg, "ytick"), 308);
  expectRoundTicks(yt, "y");
  EXPECT_LE(yt.front(), -1.7);
  EXPECT_GE(yt.back(), 1.7);
  for (const std::string& label : texts(svg, "ytick")) EXPECT_LE(label.size(), 8u) << label;
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle "), 5u);  // four points and the ring of the best one
  const std::vector<std::string> marks = texts(svg, "mark-label");
  EXPECT_NE(std::find(marks.begin(), marks.end(), "best 1 (1.7e308)"), marks.end());
  // The same on x, and the largest doubles themselves.
  const double big = std::numeric_limits<double>::max();
  PlotSeries wide{"x", {-big, 0, big}, {1, 2, 3}};
  ASSERT_NO_THROW(svg = lineChartSvg({wide}, PlotOptions{}));
  const std::vector<double> xt = inUnitsOf(texts(svg, "xtick"), 308);
  expectRoundTicks(xt, "x");
  EXPECT_LE(xt.front(), -big / 1e308);
  EXPECT_GE(xt.back(), big / 1e308);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(SvgPlot, AxisUnits) {
  EXPECT_EQ(axisExponent({1, -5e14, NAN}), 0);
  EXPECT_EQ(axisExponent({1e15}), 15);
  EXPECT_EQ(axisExponent({3, -1.7e308, INFINITY}), 308);
  EXPECT_DOUBLE_EQ(inUnits(1.7e308, 308), 1.7);
  EXPECT_EQ(unitLabel("1.5", 308), "1.5e308");
  EXPECT_EQ(unitLabel("-2.5e-05", 308), "-2.5e303");
  EXPECT_EQ(unitLabel("0.0", 308), "0.0");
  EXPECT_EQ(unitLabel("12.5", 0), "12.5");
}

TEST(SvgPlot, RejectsUnusableOptions) {
  PlotOptions tiny;
  tiny.width = 300;  // margins and legend take 240 px
  EXPECT_THROW(lineChartSvg({}, tiny), UsageError);
  PlotOptions factor;
  factor.outlierMadFactor = 0;
  EXPECT_THROW(lineChartSvg({}, factor), UsageError);
}

}  // namespace
}  // namespace fixres
