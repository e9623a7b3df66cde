// The sweep's plots: sweep.svg (top-1 against the test size, a curve per crop fraction and
// fine-tuning), sweep_speed.svg (top-1 against images per second, the Pareto front, the budget)
// and sweep_grid.svg (top-1 over size x crop fraction, the chosen cell and the budget's boundary).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fixres/plot/GridSvg.h"
#include "fixres/plot/SvgPlot.h"
#include "fixres/sweep/Sweep.h"

namespace fixres::engine {
namespace {

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A setting of a cell beside its size: its precision (when several are swept) and crop fraction.
struct CellSetting {
  Precision precision;
  double cropPct;
};

// The settings every size is scored at, in the rows' order: precisions, crops within.
std::vector<CellSetting> cellSettings(const SweepOptions& o, const SweepResult& result) {
  std::vector<CellSetting> out;
  for (Precision p : result.precisions)
    for (double c : o.cropPcts) out.push_back({p, c});
  return out;
}

// ", bf16, crop 0.9": what tells a setting from the others (nothing when there is one).
std::string settingSuffix(const SweepOptions& o, const SweepResult& result, const CellSetting& s) {
  std::string text;
  if (result.precisions.size() > 1) text += std::string(", ") + precisionName(s.precision);
  if (o.cropPcts.size() > 1) text += ", crop " + shortNumber(s.cropPct);
  return text;
}

}  // namespace

std::string sweepSvg(const SweepOptions& o, const SweepResult& result) {
  // A curve per setting (precision and crop fraction) and per fine-tuning, named by its setting
  // when there are several.
  const char* plainColors[] = {"#1f77b4", "#17becf", "#9467bd", "#8c564b"};
  const char* tunedColors[] = {"#d62728", "#ff7f0e", "#e377c2", "#bcbd22"};
  std::vector<PlotSeries> series;
  const auto settings = cellSettings(o, result);
  for (size_t k = 0; k < settings.size(); ++k) {
    std::vector<double> xs, plain, tuned;
    for (const SweepRow& r : result.rows) {
      if (r.cropPct != settings[k].cropPct || r.precision != settings[k].precision) continue;
      xs.push_back(r.size);
      plain.push_back(r.plain.top1);
      tuned.push_back(r.finetuned.top1);
    }
    const std::string suffix = settingSuffix(o, result, settings[k]);
    series.push_back({"no fine-tuning" + suffix, xs, plain, plainColors[k % 4], true});
    if (o.finetune)
      series.push_back({"FixRes fine-tuned" + suffix, xs, tuned, tunedColors[k % 4], true});
  }
  PlotOptions po;
  po.title = "Top-1 vs test resolution (" + o.split + ")";
  po.xLabel = "test resolution (px)";
  po.yLabel = "top-1 (%)";
  po.xUnit = "px";
  po.yUnit = "%";
  char suggested[48];
  std::snprintf(suggested, sizeof(suggested), "suggested %.1f", result.suggested);
  po.marks = {{static_cast<double>(o.trainSize), "train " + std::to_string(o.trainSize), "#555555",
               MarkStyle::kSolid},
              {result.suggested, suggested, "#2ca02c", MarkStyle::kDotted}};
  // highlightMax: the best resolution of each curve is ringed and labelled.
  return lineChartSvg(series, po);
}

std::string sweepSpeedSvg(const SweepOptions& o, const SweepResult& result) {
  std::vector<double> xs, ys, fx, fy;
  for (const SweepRow& r : result.rows) {
    xs.push_back(r.imagesPerS);
    ys.push_back(decidingTop1(r, o.finetune));
  }
  std::vector<const SweepRow*> front;
  for (const SweepRow& r : result.rows)
    if (r.pareto) front.push_back(&r);
  std::sort(front.begin(), front.end(),
            [](const SweepRow* a, const SweepRow* b) { return a->imagesPerS < b->imagesPerS; });
  for (const SweepRow* r : front) {
    fx.push_back(r->imagesPerS);
    fy.push_back(decidingTop1(*r, o.finetune));
  }
  PlotOptions po;
  po.title = std::string("Top-1") + (o.finetune ? " (fine-tuned)" : "") + " vs images/s, batch " +
             std::to_string(o.timedBatch()) + " (" + o.split + ")";
  po.xLabel = "images per second (model forward pass)";
  po.yLabel = "top-1 (%)";
  po.xUnit = "img/s";
  po.yUnit = "%";
  // The budget as a line at its images per second, when it falls on the chart (up to 1.25x the
  // fastest size); one far off it would squash the sizes into a corner, so the title says it.
  double fastest = 0;
  for (double x : xs)
    if (std::isfinite(x)) fastest = std::max(fastest, x);
  if (fastest > 0) {  // from 0, so that the gaps between sizes read as ratios
    po.xMin = 0;
    po.xMax = 1.3 * fastest;
  }
  char label[96];
  const auto budgetMark = [&](double x, const char* text) {
    if (x <= 1.25 * fastest) {
      po.marks.push_back({x, text, "#555555", MarkStyle::kSolid});
    } else {
      po.title += std::string("; ") + text + " is off the chart";
    }
  };
  if (o.minThroughput > 0) {
    std::snprintf(label, sizeof(label), "min %.4g img/s", o.minThroughput);
    budgetMark(o.minThroughput, label);
  }
  if (o.maxLatencyMs > 0) {
    std::snprintf(label, sizeof(label), "max %.4g ms/batch", o.maxLatencyMs);
    budgetMark(o.timedBatch() * 1000.0 / o.maxLatencyMs, label);
  }
  if (result.chosen) {
    const SweepRow& c = result.rows[*result.chosen];
    if (result.precisions.size() > 1)
      std::snprintf(label, sizeof(label), "chosen %d px, %s", c.size, precisionName(c.precision));
    else
      std::snprintf(label, sizeof(label), "chosen %d px", c.size);
    po.marks.push_back({c.imagesPerS, label, "#2ca02c", MarkStyle::kDotted});
  }
  // The cells as points, a series per precision when several are swept.
  // Each point labelled with its size (and crop fraction when several are swept).
  std::vector<PlotSeries> series;
  const char* colors[] = {"#1f77b4", "#9467bd", "#17becf", "#8c564b"};
  const bool severalCrops = o.cropPcts.size() > 1;
  for (size_t k = 0; k < result.precisions.size(); ++k) {
    const bool several = result.precisions.size() > 1;
    PlotSeries ser{several ? std::string("sizes, ") + precisionName(result.precisions[k])
                           : std::string("sizes"),
                   {},
                   {},
                   colors[k % 4],
                   false};
    ser.joined = false;  // the cells in row order are no curve: the Pareto front is the line
    for (size_t i = 0; i < result.rows.size(); ++i) {
      const SweepRow& r = result.rows[i];
      if (several && r.precision != result.precisions[k]) continue;
      ser.x.push_back(xs[i]);
      ser.y.push_back(ys[i]);
      char text[48];
      if (severalCrops)
        std::snprintf(text, sizeof text, "%d px, %.3g", r.size, r.cropPct);
      else
        std::snprintf(text, sizeof text, "%d px", r.size);
      ser.pointLabels.push_back(text);
    }
    series.push_back(std::move(ser));
    if (!several) break;
  }
  series.push_back({"Pareto front", fx, fy, "#d62728", false});
  return lineChartSvg(series, po);
}

std::string sweepGridSvg(const SweepOptions& o, const SweepResult& result) {
  // Columns: the sizes; rows: the settings, precisions and crop fractions (rows are sizes in
  // order, settings within).
  const auto settings = cellSettings(o, result);
  const size_t crops = settings.size(), sizes = result.rows.size() / std::max<size_t>(crops, 1);
  const bool precisions = result.precisions.size() > 1;
  GridSvgOptions g;
  g.rowTitle = precisions ? "precision, crop fraction" : "crop fraction";
  g.columnTitle = "test resolution (px)";
  for (const CellSetting& s : settings)
    g.rowNames.push_back((precisions ? std::string(precisionName(s.precision)) + ", " : "") +
                         shortNumber(s.cropPct));
  for (size_t j = 0; j < sizes; ++j)
    g.columnNames.push_back(std::to_string(result.rows[j * crops].size));
  const bool budget = o.maxLatencyMs > 0 || o.minThroughput > 0 || o.maxShiftLoss > 0;
  std::vector<double> plain(result.rows.size()), tuned(result.rows.size());
  for (size_t j = 0; j < sizes; ++j)
    for (size_t k = 0; k < crops; ++k) {
      const SweepRow& r = result.rows[j * crops + k];
      plain[k * sizes + j] = r.plain.top1;
      tuned[k * sizes + j] = r.finetuned.top1;
      if (!budget) continue;
      if (g.allowed.empty()) g.allowed.assign(result.rows.size(), true);
      g.allowed[k * sizes + j] =
          chooseWithinBudget({r}, o.finetune, o.maxLatencyMs, o.minThroughput).has_value();
    }
  if (budget) {
    g.ruledOutNote = "outside the budget (";
    if (o.maxLatencyMs > 0) g.ruledOutNote += shortNumber(o.maxLatencyMs) + " ms per batch";
    if (o.maxLatencyMs > 0 && o.minThroughput > 0) g.ruledOutNote += ", ";
    if (o.minThroughput > 0) g.ruledOutNote += shortNumber(o.minThroughput) + " img/s";
    if (o.maxShiftLoss > 0 && (o.maxLatencyMs > 0 || o.minThroughput > 0)) g.ruledOutNote += ", ";
    if (o.maxShiftLoss > 0)
      g.ruledOutNote += "at most " + shortNumber(o.maxShiftLoss) + " points lost on a shifted set";
    g.ruledOutNote += ")";
  }
  const auto panel = [&](const std::vector<double>& v, const std::string& what, bool deciding) {
    GridSvgOptions p = g;
    p.title = "Top-1 (%), " + what + " (" + o.split + ")";
    if (deciding && result.chosen) {
      const SweepRow& c = result.rows[*result.chosen];
      p.markedColumn = static_cast<int>(*result.chosen / crops);
      p.markedRow = static_cast<int>(*result.chosen % crops);
      p.markNote = "chosen: " + std::to_string(c.size) + " px" +
                   (precisions ? std::string(", ") + precisionName(c.precision) : "") + ", crop " +
                   shortNumber(c.cropPct) + " (" + shortNumber(decidingTop1(c, o.finetune)) + " %)";
    }
    return valueGridSvg(v, p);
  };
  std::vector<std::string> panels{panel(plain, "no fine-tuning", !o.finetune)};
  if (o.finetune) panels.push_back(panel(tuned, "FixRes fine-tuned", true));
  return stackedSvg(panels);
}

}  // namespace fixres::engine
