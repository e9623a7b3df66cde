// The files of `fixres eval --report DIR` (writeEvalReport, EvalReport.h): one writer per file,
// from the statistics EvalReport.cpp computes.
#include "fixres/engine/EvalReport.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "fixres/common/CsvText.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/NumberText.h"
#include "fixres/plot/HeatMapSvg.h"
#include "fixres/plot/SvgPlot.h"

namespace fixres::engine {
namespace {

constexpr size_t kListedConfusions = 20;
constexpr size_t kListedWorstClasses = 10;

std::string percentText(double part, double whole) {
  return whole > 0 ? shortestText(100.0 * part / whole) : std::string();
}

std::string percentLabel(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * share);
  return buf;
}

// The share of p's true class's images predicted as p's class.
double shareOfTrue(const ClassReport& r, const ConfusionPair& p) {
  const auto images = r.classes[p.trueClass].images;
  return images > 0 ? static_cast<double>(p.count) / static_cast<double>(images) : 0.0;
}

void writePerClassCsv(const std::filesystem::path& base, const ClassReport& r,
                      const std::vector<std::string>& names) {
  std::string csv =
      "class,name,images,top1,top5,predicted,precision,most_confused_with,"
      "most_confused_name,confused_images\n";
  for (size_t a = 0; a < r.classes.size(); ++a) {
    const auto& row = r.classes[a];
    csv += std::to_string(a) + "," + csvField(names[a]) + "," + std::to_string(row.images) + "," +
           percentText(row.top1, row.images) + "," + percentText(row.top5, row.images) + "," +
           std::to_string(row.predicted) + "," + percentText(row.top1, row.predicted) + ",";
    if (row.confusedWith >= 0)
      csv += std::to_string(row.confusedWith) + "," + csvField(names[row.confusedWith]) + "," +
             std::to_string(row.confusedCount);
    else
      csv += ",,0";
    csv += "\n";
  }
  writeFileAtomic((base / "per_class.csv").string(), csv);
}

// confusion.csv: the whole matrix, rows the true classes.
void writeConfusionMatrixCsv(const std::filesystem::path& base, const ClassReport& r,
                             const std::vector<std::string>& names) {
  const size_t classes = r.classes.size();
  std::string csv = "true\\predicted";
  for (const auto& name : names) csv += "," + csvField(name);
  csv += "\n";
  for (size_t a = 0; a < classes; ++a) {
    csv += csvField(names[a]);
    for (size_t b = 0; b < classes; ++b) csv += "," + std::to_string(r.confusion[a * classes + b]);
    csv += "\n";
  }
  writeFileAtomic((base / "confusion.csv").string(), csv);
}

// confusions.csv: every off-diagonal pair with an image.
void writeConfusionPairsCsv(const std::filesystem::path& base, const ClassReport& r,
                            const std::vector<std::string>& names) {
  std::string csv = "true,true_name,predicted,predicted_name,images,share_of_true\n";
  for (const auto& p : r.confusions) {
    csv += std::to_string(p.trueClass) + "," + csvField(names[p.trueClass]) + "," +
           std::to_string(p.predicted) + "," + csvField(names[p.predicted]) + "," +
           std::to_string(p.count) + "," +
           percentText(static_cast<double>(p.count), r.classes[p.trueClass].images) + "\n";
  }
  writeFileAtomic((base / "confusions.csv").string(), csv);
}

// confusion.svg: the heat map, the top confusions listed beside it.
void writeConfusionSvg(const std::filesystem::path& base, const ClassReport& r,
                       const ReportInfo& info) {
  const auto& names = info.classNames;
  HeatMapOptions ho;
  ho.title = "Confusion at " + std::to_string(info.inputSize) + " px: top-1 " +
             percentLabel(r.top1 / 100) + " of " + std::to_string(r.count) + " images";
  for (size_t k = 0; k < std::min(kListedConfusions, r.confusions.size()); ++k) {
    const auto& p = r.confusions[k];
    ho.notes.push_back(names[p.trueClass] + " -> " + names[p.predicted] + ": " +
                       std::to_string(p.count) + " (" + percentLabel(shareOfTrue(r, p)) + ")");
  }
  if (ho.notes.empty()) ho.notes.push_back("none: every image is right");
  writeFileAtomic((base / "confusion.svg").string(), confusionHeatMapSvg(r.confusion, names, ho));
}

// The reliability at temperature 1, and at the fitted temperature when there is one (with its
// summary for report.json; null without).
struct ReliabilityCurves {
  std::vector<std::pair<double, Reliability>> curves;
  nlohmann::ordered_json temperature;
};

ReliabilityCurves reliabilityCurves(const torch::Tensor& logits, const torch::Tensor& labels,
                                    const ClassReport& r, const ReportInfo& info) {
  ReliabilityCurves c;
  c.curves = {{1.0, r.reliability}};
  if (info.temperature) {
    const auto& t = *info.temperature;
    auto scaled = reliability(logits, labels, t.temperature);
    c.curves.emplace_back(t.temperature, scaled);
    c.temperature = {{"value", t.temperature},
                     {"fitted_on", info.temperatureDataset},
                     {"images", t.images},
                     {"held_out_loss_before", t.lossBefore},
                     {"held_out_loss_after", t.lossAfter},
                     {"at_bound", t.atBound},
                     {"loss", meanCrossEntropy(logits, labels, t.temperature)},
                     {"ece", 100 * scaled.ece}};
  }
  return c;
}

// reliability.csv (every bin of every curve) and reliability.svg (the non-empty bins, and the
// diagonal where accuracy equals confidence; each bin's image count, small bins hollow).
void writeReliability(const std::filesystem::path& base,
                      const std::vector<std::pair<double, Reliability>>& curves,
                      const ReportInfo& info) {
  std::string csv = "temperature,bin,lower,upper,images,confidence,accuracy\n";
  int64_t images = 0;  // every curve bins the same images
  if (!curves.empty())
    for (const auto& bin : curves.front().second.bins) images += bin.images;
  std::vector<PlotSeries> series;
  const char* colors[] = {"#1f77b4", "#d62728"};
  for (size_t k = 0; k < curves.size(); ++k) {
    const auto& [t, rel] = curves[k];
    PlotSeries s;
    char name[64];
    std::snprintf(name, sizeof name, "T = %.3g (ECE %.1f %%)", t, 100 * rel.ece);
    s.name = k == 0 ? "softmax (ECE " + percentLabel(rel.ece) + ")" : std::string(name);
    s.color = colors[k];
    for (size_t b = 0; b < rel.bins.size(); ++b) {
      const auto& bin = rel.bins[b];
      csv += shortestText(t) + "," + std::to_string(b) + "," + shortestText(bin.lower) + "," +
             shortestText(bin.upper) + "," + std::to_string(bin.images) + "," +
             shortestText(bin.confidence) + "," + shortestText(bin.accuracy) + "\n";
      if (bin.images == 0) continue;
      s.x.push_back(100 * bin.confidence);
      s.y.push_back(100 * bin.accuracy);
      // Each bin's image count beside it (the first curve's: the bins hold the same images at
      // another temperature only when it is 1), and a hollow point for a bin too small to say
      // much (fewer than 10 images, or under 1 % of them).
      if (k == 0) s.pointLabels.push_back(std::to_string(bin.images));
      s.weak.push_back(bin.images < std::max<int64_t>(10, images / 100));
    }
    series.push_back(std::move(s));
  }
  series.push_back({"accuracy = confidence", {0, 100}, {0, 100}, "#888888"});
  writeFileAtomic((base / "reliability.csv").string(), csv);
  PlotOptions po;
  po.title = "Reliability at " + std::to_string(info.inputSize) + " px (" +
             std::to_string(kReliabilityBins) + " confidence bins; hollow: fewer than " +
             std::to_string(std::max<int64_t>(10, images / 100)) + " images)";
  po.xLabel = "confidence (%)";
  po.yLabel = "accuracy (%)";
  po.xUnit = po.yUnit = "%";
  po.clipLowOutliers = false;
  po.xMin = po.yMin = 0;
  po.xMax = po.yMax = 100;
  writeFileAtomic((base / "reliability.svg").string(), lineChartSvg(series, po));
}

// The classes with images, lowest top-1 first (ties in class order), as report.json lists them.
nlohmann::ordered_json worstClassesJson(const ClassReport& r,
                                        const std::vector<std::string>& names) {
  std::vector<size_t> order;
  for (size_t a = 0; a < r.classes.size(); ++a) {
    if (r.classes[a].images > 0) order.push_back(a);
  }
  auto accuracy = [&](size_t a) {
    return static_cast<double>(r.classes[a].top1) / static_cast<double>(r.classes[a].images);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return accuracy(x) < accuracy(y); });
  nlohmann::ordered_json worst = nlohmann::ordered_json::array();
  for (size_t k = 0; k < std::min(kListedWorstClasses, order.size()); ++k) {
    const size_t a = order[k];
    worst.push_back({{"class", a},
                     {"name", names[a]},
                     {"images", r.classes[a].images},
                     {"top1", 100 * accuracy(a)}});
  }
  return worst;
}

nlohmann::ordered_json topConfusionsJson(const ClassReport& r,
                                         const std::vector<std::string>& names) {
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (size_t k = 0; k < std::min(kListedConfusions, r.confusions.size()); ++k) {
    const auto& p = r.confusions[k];
    top.push_back({{"true", p.trueClass},
                   {"true_name", names[p.trueClass]},
                   {"predicted", p.predicted},
                   {"predicted_name", names[p.predicted]},
                   {"images", p.count},
                   {"share_of_true", 100 * shareOfTrue(r, p)}});
  }
  return top;
}

// report.json: the summary, the worst classes and the top confusions.
void writeReportJson(const std::filesystem::path& base, const ClassReport& r,
                     const ReportInfo& info, const nlohmann::ordered_json& temperature) {
  nlohmann::ordered_json worst = worstClassesJson(r, info.classNames);
  nlohmann::ordered_json top = topConfusionsJson(r, info.classNames);
  nlohmann::ordered_json doc = {{"architecture", info.architecture},
                                {"weights", info.weights},
                                {"dataset", info.dataset},
                                {"input_size", info.inputSize},
                                {"images", r.count},
                                {"classes", r.classes.size()},
                                {"top1", r.top1},
                                {"top5", r.top5},
                                {"loss", r.loss},
                                {"ece", 100 * r.reliability.ece},
                                {"reliability_bins", kReliabilityBins}};
  if (!info.complete) doc["complete"] = false;
  if (!temperature.is_null()) doc["temperature"] = temperature;
  doc["worst_classes"] = worst;
  doc["top_confusions"] = top;
  writeFileAtomic((base / "report.json").string(), jsonText(roundedNumbers(doc), 2) + "\n");
}

}  // namespace

void writeEvalReport(const std::string& dir, const torch::Tensor& logits,
                     const torch::Tensor& labels, const ClassReport& r, const ReportInfo& info) {
  const auto& names = info.classNames;
  const size_t classes = r.classes.size();
  FIXRES_CHECK(names.size() == classes, InternalError, names.size(), " class names for ", classes,
               " classes");
  makeDirectories(dir);
  const std::filesystem::path base(dir);
  writePerClassCsv(base, r, names);
  writeConfusionMatrixCsv(base, r, names);
  writeConfusionPairsCsv(base, r, names);
  writeConfusionSvg(base, r, info);
  const ReliabilityCurves reliabilityOut = reliabilityCurves(logits, labels, r, info);
  writeReliability(base, reliabilityOut.curves, info);
  writeReportJson(base, r, info, reliabilityOut.temperature);
}

}  // namespace fixres::engine
