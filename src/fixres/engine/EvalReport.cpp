// Per-class accuracy, confusions, reliability and temperature, and the class-order check
// (EvalReport.h; the report's files are written by EvalReportFiles.cpp).
#include "fixres/engine/EvalReport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/RunCurves.h"

namespace fixres::engine {
namespace {

void checkInputs(const torch::Tensor& logits, const torch::Tensor& labels) {
  FIXRES_CHECK(logits.dim() == 2 && labels.dim() == 1 && logits.size(0) == labels.size(0),
               InternalError, "the report needs N x C logits and N labels, got ", logits.sizes(),
               " and ", labels.sizes());
  if (labels.numel() > 0) {
    const int64_t lo = labels.min().item<int64_t>(), hi = labels.max().item<int64_t>();
    FIXRES_CHECK(lo >= 0 && hi < logits.size(1), InternalError, "labels in [", lo, ", ", hi,
                 "] for ", logits.size(1), " classes");
  }
}

std::string quoted(const std::string& name) {
  return "'" + name + "'";
}

}  // namespace

double meanCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels,
                        double temperature) {
  if (labels.numel() == 0) return 0;
  auto l = logits.to(torch::kFloat64) / temperature;
  return torch::nn::functional::cross_entropy(l, labels.to(torch::kLong)).item<double>();
}

Reliability reliability(const torch::Tensor& logits, const torch::Tensor& labels,
                        double temperature, int bins) {
  checkInputs(logits, labels);
  Reliability r;
  r.bins.resize(bins);
  for (int b = 0; b < bins; ++b) {
    r.bins[b].lower = static_cast<double>(b) / bins;
    r.bins[b].upper = static_cast<double>(b + 1) / bins;
  }
  const int64_t n = labels.size(0);
  if (n == 0) return r;
  auto confidence =
      std::get<0>(torch::softmax(logits.to(torch::kFloat64) / temperature, 1).max(1)).contiguous();
  // Right or wrong as top-1 counts it (the first of topk).
  auto predicted = std::get<1>(logits.topk(1, 1)).select(1, 0).contiguous();
  auto y = labels.to(torch::kLong).contiguous();
  const auto* c = confidence.data_ptr<double>();
  const auto* p = predicted.data_ptr<int64_t>();
  const auto* t = y.data_ptr<int64_t>();
  std::vector<double> sumConfidence(bins, 0), sumRight(bins, 0);
  for (int64_t i = 0; i < n; ++i) {
    // The bin with lower < c <= upper, decided by the same comparisons.
    int b = std::clamp(static_cast<int>(std::ceil(c[i] * bins)) - 1, 0, bins - 1);
    while (b > 0 && c[i] <= r.bins[b].lower) --b;
    while (b < bins - 1 && c[i] > r.bins[b].upper) ++b;
    ++r.bins[b].images;
    sumConfidence[b] += c[i];
    sumRight[b] += p[i] == t[i] ? 1 : 0;
  }
  for (int b = 0; b < bins; ++b) {
    auto& bin = r.bins[b];
    if (bin.images == 0) continue;
    bin.confidence = sumConfidence[b] / static_cast<double>(bin.images);
    bin.accuracy = sumRight[b] / static_cast<double>(bin.images);
    r.ece += std::abs(bin.accuracy - bin.confidence) * static_cast<double>(bin.images) /
             static_cast<double>(n);
  }
  return r;
}

ClassReport classReport(const torch::Tensor& logits, const torch::Tensor& labels) {
  checkInputs(logits, labels);
  ClassReport r;
  const int64_t n = labels.size(0), classes = logits.size(1);
  r.count = n;
  r.classes.resize(classes);
  r.confusion.assign(classes * classes, 0);
  const int64_t k = std::min<int64_t>(5, classes);
  auto top = std::get<1>(logits.topk(k, 1)).contiguous();
  auto y = labels.to(torch::kLong).contiguous();
  const auto* tp = top.data_ptr<int64_t>();
  const auto* t = y.data_ptr<int64_t>();
  int64_t right1 = 0, right5 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t truth = t[i], predicted = tp[i * k];
    auto& row = r.classes[truth];
    ++row.images;
    ++r.classes[predicted].predicted;
    ++r.confusion[truth * classes + predicted];
    if (predicted == truth) {
      ++row.top1;
      ++right1;
    }
    if (std::find(tp + i * k, tp + (i + 1) * k, truth) != tp + (i + 1) * k) {
      ++row.top5;
      ++right5;
    }
  }
  for (int64_t a = 0; a < classes; ++a) {
    auto& row = r.classes[a];
    for (int64_t b = 0; b < classes; ++b) {
      const int64_t c = r.confusion[a * classes + b];
      if (b == a || c == 0) continue;
      r.confusions.push_back({a, b, c});
      if (c > row.confusedCount) {
        row.confusedCount = c;
        row.confusedWith = b;
      }
    }
  }
  std::stable_sort(
      r.confusions.begin(), r.confusions.end(),
      [](const ConfusionPair& x, const ConfusionPair& y) { return x.count > y.count; });
  if (n > 0) {
    r.top1 = 100.0 * static_cast<double>(right1) / static_cast<double>(n);
    r.top5 = 100.0 * static_cast<double>(right5) / static_cast<double>(n);
  }
  r.loss = meanCrossEntropy(logits, labels);
  r.reliability = reliability(logits, labels);
  return r;
}

TemperatureFit fitTemperature(const torch::Tensor& logits, const torch::Tensor& labels) {
  checkInputs(logits, labels);
  FIXRES_CHECK(labels.numel() > 0, DataError, "no image to fit the temperature on");
  auto l = logits.to(torch::kFloat64);
  auto y = labels.to(torch::kLong);
  auto loss = [&](double u) {
    return torch::nn::functional::cross_entropy(l / std::exp(u), y).item<double>();
  };
  // Golden-section search on u = log T: the loss is convex in 1 / T, hence unimodal in u.
  const double lo = std::log(0.01), hi = std::log(100.0);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double c = b - ratio * (b - a), d = a + ratio * (b - a);
  double fc = loss(c), fd = loss(d);
  while (b - a > 1e-9) {
    if (fc <= fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - ratio * (b - a);
      fc = loss(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + ratio * (b - a);
      fd = loss(d);
    }
  }
  TemperatureFit fit;
  const double u = (a + b) / 2;
  fit.temperature = std::exp(u);
  fit.images = labels.size(0);
  fit.lossBefore = loss(0);
  fit.lossAfter = loss(u);
  fit.atBound = u - lo < 1e-6 || hi - u < 1e-6;
  return fit;
}

std::optional<RecordedTop1> recordedTop1(const std::string& weightPath) {
  if (!isModelFolder(weightPath)) return std::nullopt;
  const std::string metrics = (std::filesystem::path(weightPath) / "metrics.jsonl").string();
  if (!fileExists(metrics)) return std::nullopt;
  RunCurves curves;
  try {
    curves = readRunCurves(metrics);
  } catch (const Error& e) {
    log::warn("the class-order check cannot read the run's record: ", oneLine(e.what()));
    return std::nullopt;
  }
  std::optional<RecordedTop1> best;
  auto consider = [&](const std::string& key, const std::string& what) {
    for (double v : curves.top1[key].top1) {
      if (std::isfinite(v) && (!best || v > best->top1)) best = RecordedTop1{v, what + metrics};
    }
  };
  for (const auto& [key, series] : curves.top1) {
    if (key.rfind("eval", 0) == 0) consider(key, "the validation top-1 in ");
  }
  if (!best) consider("train", "the training top-1 in ");
  return best;
}

double binomialAtMost(int64_t k, int64_t n, double p) {
  if (k >= n) return 1.0;
  if (k < 0) return 0.0;
  if (p <= 0) return 1.0;
  if (p >= 1) return 0.0;
  // Sum of the probabilities of 0..k successes, in logs (n may be in the millions).
  const double lp = std::log(p), lq = std::log1p(-p), ln = std::lgamma(n + 1.0);
  double sum = 0;
  for (int64_t i = 0; i <= k; ++i)
    sum += std::exp(ln - std::lgamma(i + 1.0) - std::lgamma(double(n - i) + 1.0) + double(i) * lp +
                    double(n - i) * lq);
  return std::min(1.0, sum);
}

bool farBelowRecord(double top1, int64_t images, size_t classes, double recorded) {
  if (classes < 2 || images <= 0) return false;
  const double chance = 100.0 / static_cast<double>(classes);
  if (recorded <= chance) return false;
  const double halfway = (chance + (recorded - chance) / 2) / 100.0;
  const auto right = static_cast<int64_t>(std::llround(top1 / 100.0 * double(images)));
  return binomialAtMost(right, images, halfway) < kClassOrderAlpha;
}

bool mappingShownWrong(const std::vector<std::string>& modelNames,
                       const std::vector<std::string>& datasetNames) {
  for (size_t i = 0; i < std::min(modelNames.size(), datasetNames.size()); ++i)
    if (modelNames[i] != datasetNames[i]) return true;
  return false;
}

std::string classOrderMessage(double top1, int64_t images, size_t classes,
                              const RecordedTop1& recorded,
                              const std::vector<std::string>& modelNames,
                              const std::vector<std::string>& datasetNames,
                              const ClassReport* report) {
  char head[256];
  std::snprintf(head, sizeof head,
                "top-1 %.2f %% of %lld images is near chance (%.2f %% with %zu classes) although "
                "%.2f %% is ",
                top1, static_cast<long long>(images), 100.0 / static_cast<double>(classes), classes,
                recorded.top1);
  std::string m = head + recorded.what + ": the class order may not match the weights'";
  if (!modelNames.empty() && modelNames != datasetNames) {
    m += "; first mismatching classes:";
    int listed = 0;
    const size_t n = std::max(modelNames.size(), datasetNames.size());
    for (size_t i = 0; i < n && listed < 3; ++i) {
      const std::string a = i < modelNames.size() ? quoted(modelNames[i]) : "none";
      const std::string b = i < datasetNames.size() ? quoted(datasetNames[i]) : "none";
      if (a == b) continue;
      m += std::string(listed++ == 0 ? "" : ",") + " class " + std::to_string(i) + " is " + a +
           " in the weights but " + b + " in the dataset";
    }
    return m;
  }
  if (!modelNames.empty())
    m += " (the weights record the same class names in the same order: check the "
         "preprocessing, --mean, --std and --resize-mode)";
  else
    m += " (the weights record no class names: compare the class folders they were trained on "
         "with the dataset's)";
  if (report != nullptr && !report->confusions.empty()) {
    m += "; most confused:";
    for (size_t k = 0; k < std::min<size_t>(3, report->confusions.size()); ++k) {
      const auto& p = report->confusions[k];
      m += std::string(k == 0 ? "" : ",") + " " + quoted(datasetNames[p.trueClass]) +
           " predicted as " + quoted(datasetNames[p.predicted]) + " (" + std::to_string(p.count) +
           " of " + std::to_string(report->classes[p.trueClass].images) + ")";
    }
  } else if (report == nullptr) {
    m += "; --report DIR shows what each class is predicted as";
  }
  return m;
}

}  // namespace fixres::engine
