// Evaluation that explains itself: what `fixres eval --report DIR` computes from the logits of
// every image and writes (docs/after-training.md, "Why is accuracy low?"), and the class-order
// check eval runs after every evaluation.
//
// Confidence calibration here is of the predicted probabilities (expected calibration error,
// reliability diagram, temperature scaling); it has nothing to do with `fixres calibrate`, which
// re-estimates BatchNorm statistics.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fixres::engine {

// One true class: its images, how many were right at top-1 and top-5, how many images of any
// class were predicted as it, and the class its images were most often mistaken for (-1: none;
// the lowest index on ties).
struct ClassRow {
  int64_t images = 0, top1 = 0, top5 = 0, predicted = 0;
  int64_t confusedWith = -1, confusedCount = 0;
};

struct ConfusionPair {
  int64_t trueClass = 0, predicted = 0, count = 0;
};

// The reliability diagram's bins (Guo et al. 2017, "On calibration of modern neural networks"):
// bin b holds the images whose confidence (the largest softmax probability) lies in
// (b / B, (b + 1) / B]; its confidence and accuracy are the means over those images (fractions).
// ECE = sum over bins of |accuracy - confidence| * images / N, a fraction.
constexpr int kReliabilityBins = 15;
struct ReliabilityBin {
  double lower = 0, upper = 0;
  int64_t images = 0;
  double confidence = 0, accuracy = 0;  // 0 when the bin is empty
};
struct Reliability {
  std::vector<ReliabilityBin> bins;
  double ece = 0;
};

// The softmax of logits / temperature, binned.
Reliability reliability(const torch::Tensor& logits, const torch::Tensor& labels,
                        double temperature = 1, int bins = kReliabilityBins);

// Mean cross-entropy of softmax(logits / temperature), in float64.
double meanCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels,
                        double temperature = 1);

struct ClassReport {
  int64_t count = 0;
  double top1 = 0, top5 = 0, loss = 0;  // percent, percent, mean cross-entropy
  std::vector<ClassRow> classes;
  std::vector<int64_t> confusion;         // C x C row-major: row the true class, column top-1
  std::vector<ConfusionPair> confusions;  // the non-zero off-diagonal cells, most images first
  Reliability reliability;
};

// `logits`: float N x C, `labels`: int64 N in [0, C). Top-1 and top-5 are those of
// correctInTopK (Metrics.h): the predicted class is topk's first.
ClassReport classReport(const torch::Tensor& logits, const torch::Tensor& labels);

// Temperature scaling: the T > 0 minimising the mean cross-entropy of softmax(logits / T) on a
// held-out set. That loss is convex in 1 / T; T is searched over [0.01, 100] (golden section on
// log T, to 1e-9). atBound: the optimum lies at an end (a held-out set every image of which is
// right, or wrong, pushes T to 0 or infinity).
struct TemperatureFit {
  double temperature = 1;
  int64_t images = 0;
  double lossBefore = 0, lossAfter = 0;  // on the held-out set
  bool atBound = false;
};
TemperatureFit fitTemperature(const torch::Tensor& logits, const torch::Tensor& labels);

// What the report says besides the numbers.
struct ReportInfo {
  std::string architecture, weights, dataset;
  int inputSize = 0;
  std::vector<std::string> classNames;  // C
  bool complete = true;                 // false: stopped by a signal
  std::optional<TemperatureFit> temperature;
  std::string temperatureDataset;
};

// Writes into `dir` (created; files replaced atomically): report.json, per_class.csv,
// confusion.csv (C x C with names), confusions.csv (every non-zero off-diagonal pair, most
// images first), confusion.svg (HeatMapSvg.h, the 20 top confusions listed), reliability.csv and
// reliability.svg (with the temperature-scaled bins too when a temperature was fitted).
void writeEvalReport(const std::string& dir, const torch::Tensor& logits,
                     const torch::Tensor& labels, const ClassReport& report,
                     const ReportInfo& info);

// --- the class-order check ------------------------------------------------------------------

// The best top-1 a run folder's metrics.jsonl records (held-out evaluations first, else the
// running top-1 of training), with where it comes from; none for a weight file, a hub folder or
// a run without such a record.
struct RecordedTop1 {
  double top1 = 0;
  std::string what;  // "validation top-1 of <folder>/metrics.jsonl", ...
};
std::optional<RecordedTop1> recordedTop1(const std::string& weightPath);

// P(X <= k) for X ~ Binomial(n, p).
double binomialAtMost(int64_t k, int64_t n, double p);
// The level of the class-order check's one-sided binomial test.
inline constexpr double kClassOrderAlpha = 1e-3;
// Whether a top-1 of `top1` percent over `images` images is shown, by a one-sided binomial test at
// kClassOrderAlpha, to be below halfway between chance (100 / classes) and the `recorded` top-1:
// the weights do not behave on these images as they did where the record was made. A handful of
// images never shows it (2 images of 3 classes with a 100 % record: P = 1/9).
bool farBelowRecord(double top1, int64_t images, size_t classes, double recorded);
// Whether the weights' recorded class names (empty: none) differ from the dataset's at an index
// both have: the class mapping is then shown wrong, not only suspected.
bool mappingShownWrong(const std::vector<std::string>& modelNames,
                       const std::vector<std::string>& datasetNames);

// The message of eval's class-order check (an error when the mapping is shown wrong, else a
// warning) when top-1 is far below what the run recorded (farBelowRecord):
// it names the first classes whose names differ between the weights' record (`modelNames`,
// empty when not recorded) and the dataset; with the same names in the same order, or none
// recorded, the classes the report shows most images of another class predicted as (`report`,
// may be null), which a permuted order shows as one confusion per class.
std::string classOrderMessage(double top1, int64_t images, size_t classes,
                              const RecordedTop1& recorded,
                              const std::vector<std::string>& modelNames,
                              const std::vector<std::string>& datasetNames,
                              const ClassReport* report);

}  // namespace fixres::engine
