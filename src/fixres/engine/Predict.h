// `fixres predict`: the top-k classes of each image, in the inputs' order, over the ranks like
// extract; an unreadable image is a row with its error, not a stopped job. Rows written as CSV,
// JSON or JSON lines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"
#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"

namespace fixres::engine {

enum class ScoreKind { kProb, kLogit };
const ChoiceTable<ScoreKind>& scoreKinds();  // prob (softmax), logit

enum class PredictFormat { kCsv, kJson, kJsonl };
const ChoiceTable<PredictFormat>& predictFormats();  // csv, json, jsonl

// What predict writes: every field is a setting row of `fixres predict` (common/Setting.h), bound
// to its flag by the command and listed by `fixres settings`.
// predict's positional inputs (required).
inline constexpr Setting kPredictInputsRow{
    "",
    "inputs",
    "Inputs",
    "Image files, folders (every image below, sorted), list files (*.txt, *.lst: a path per line) "
    "or - (paths on stdin)",
    {},
    SettingRole::kInvocation,
    "predict"};

struct PredictOptions {
  int topk = 5;
  ScoreKind scores = ScoreKind::kProb;
  PredictFormat format = PredictFormat::kCsv;
  double minProb = 0;

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    v(Setting{"", "--topk", "Output", "Classes per image, best first", Range::integers(1, 1000000),
              kInvocation, "predict"},
      o.topk);
    v(Setting{"",
              "--output-type",
              "Output",
              "Scores written: prob (softmax) or logit",
              {},
              kInvocation,
              "predict"},
      o.scores, scoreKinds());
    v(Setting{"",
              "--results-format",
              "Output",
              "csv (a row per image), json (an array) or jsonl (an object per line)",
              {},
              kInvocation,
              "predict"},
      o.format, predictFormats());
    v(Setting{"", "--min-prob", "Output",
              "List a class only when its softmax probability is at least this (an image may list "
              "fewer than --topk classes, or none)",
              Range::reals(0, 1), kInvocation, "predict"},
      o.minProb);
  }
};

struct PredictRow {
  std::string path;
  std::vector<int64_t> classes;  // best first (torch.topk's order)
  std::vector<float> scores;     // softmax probabilities (float32 of a float64 softmax) or logits
  std::string error;             // non-empty: the image could not be read (classes empty)
};

// The top min(options.topk, classes) of every image of `images` (options.skipBadImages is implied),
// in the dataset's order, on rank 0 (the other ranks get an empty vector). A collective of every
// rank.
std::vector<PredictRow> predict(models::Model& model, std::shared_ptr<const data::Dataset> images,
                                const EvalOptions& options, const PredictOptions& predictOptions,
                                distributed::Communicator& comm);

// The rows as text. csv: a header `path,top1_index,top1_class,top1_<score>,...,error` with
// min(topk, classCount) column triplets, then one line per image (RFC 4180 quoting); json: an
// array of {"path", "predictions": [{"index", "class", "<score>"}], "error": null or the
// message}; jsonl: those objects one per line. `classNames` empty: a class is named by its index.
// Text that is not UTF-8 (a path, a decoder's message) has its invalid bytes replaced by U+FFFD.
std::string formatPredictions(const std::vector<PredictRow>& rows,
                              const std::vector<std::string>& classNames, int64_t classCount,
                              const PredictOptions& options);

}  // namespace fixres::engine
