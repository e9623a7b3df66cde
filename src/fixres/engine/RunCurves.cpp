// metrics.jsonl back into series, and the series into stacked line charts.
#include "fixres/engine/RunCurves.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/engine/MetricsLog.h"
#include "fixres/plot/SvgPlot.h"

namespace fixres::engine {
namespace {

// A number of the record, NaN for null (a non-finite value dumped by nlohmann::json) or absent.
double numberOr(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : NAN;
}

const char* const kPalette[] = {"#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// The legend's name of the epoch records' object `key`.
std::string seriesName(const std::string& key, const RunCurves& c) {
  if (key == "eval") return c.evalSplit.empty() ? "held-out" : c.evalSplit;
  if (key == "train") return "train (running)";
  return key;
}

}  // namespace

RunCurves readRunCurves(const std::string& path) {
  const std::string text = readRegularFile<DataError>(path, kMetricsLogMaxBytes, "metrics log");
  RunCurves c;
  size_t begin = 0;
  for (size_t lineNo = 1; begin < text.size(); ++lineNo) {
    size_t end = text.find('\n', begin);
    const bool whole = end != std::string::npos;
    if (!whole) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json r;
    std::string why;
    if (!parseJsonInput(line, &r, &why)) r = nlohmann::json(nlohmann::json::value_t::discarded);
    if (!r.is_object()) {
      if (!whole && r.is_discarded()) {
        log::warn(path, ":", lineNo, ": an unfinished last line, skipped");
        break;
      }
      FIXRES_FAIL(DataError, path, ":", lineNo, ": not a JSON object (a metrics.jsonl line)");
    }
    ++c.records;
    const auto step = r.find("step");
    if (step != r.end() && step->is_number() && r.contains("loss")) {
      c.steps.push_back(step->get<double>());
      c.loss.push_back(numberOr(r, "loss"));
      c.learningRate.push_back(numberOr(r, "lr"));
      continue;
    }
    const bool before = r.value("phase", "") == "before";
    const double epoch = before ? 0 : numberOr(r, "epoch");
    if (!std::isfinite(epoch)) continue;
    for (const auto& [key, value] : r.items()) {
      if (!value.is_object() || !value.contains("top1")) continue;
      if (key == "eval" && value.contains("split") && value["split"].is_string())
        c.evalSplit = value["split"].get<std::string>();
      auto& series = c.top1[key];
      series.epochs.push_back(epoch);
      series.top1.push_back(numberOr(value, "top1"));
    }
  }
  return c;
}

std::string runCurvesSvg(const RunCurves& c, const std::string& title) {
  FIXRES_CHECK(!c.steps.empty(), DataError, "the run has no progress record to plot yet (",
               c.records, " records)");
  std::vector<std::string> panels;
  PlotOptions po;
  po.height = 300;
  po.clipLowOutliers = false;  // the run's curves to scale: warm-up and first epochs included
  po.xLabel = "step";

  po.title = title + ": training loss";
  po.yLabel = "loss";
  panels.push_back(lineChartSvg({{"train loss", c.steps, c.loss, "#1f77b4"}}, po));

  po.title = title + ": learning rate";
  po.yLabel = "learning rate";
  panels.push_back(lineChartSvg({{"lr", c.steps, c.learningRate, "#ff7f0e"}}, po));

  std::vector<PlotSeries> top1;
  size_t color = 0;
  for (const auto& [key, s] : c.top1) {
    top1.push_back({seriesName(key, c), s.epochs, s.top1, kPalette[color++ % std::size(kPalette)]});
  }
  if (!top1.empty()) {
    po.title = title + ": top-1 per epoch";
    po.xLabel = "epoch";
    po.yLabel = "top-1 (%)";
    po.yUnit = "%";
    panels.push_back(lineChartSvg(top1, po));
  }
  return stackedSvg(panels);
}

}  // namespace fixres::engine
