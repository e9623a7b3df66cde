// `fixres predict`: the top-k classes of each image, in the inputs' order, over the ranks like
// extract; an unreadable image is a row with its error, not a stopped job. Rows written as CSV,
// JSON or JSON lines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"

namespace fixres::engine {

enum class ScoreKind { kProb, kLogit };
const ChoiceTable<ScoreKind>& scoreKinds();  // prob (softmax), logit

enum class PredictFormat { kCsv, kJson, kJsonl };
const ChoiceTable<PredictFormat>& predictFormats();  // csv, json, jsonl

struct PredictRow {
  std::string path;
  std::vector<int64_t> classes;  // best first (torch.topk's order)
  std::vector<float> scores;     // softmax probabilities (float32 of a float64 softmax) or logits
  std::string error;             // non-empty: the image could not be read (classes empty)
};

// The top min(topk, classes) of every image of `images` (options.skipBadImages is implied), in the
// dataset's order, on rank 0 (the other ranks get an empty vector). A collective of every rank.
std::vector<PredictRow> predict(models::Model& model, std::shared_ptr<const data::Dataset> images,
                                const EvalOptions& options, int topk, ScoreKind scores,
                                distributed::Communicator& comm);

// The rows as text. csv: a header `path,top1_index,top1_class,top1_<score>,...,error`, then one
// line per image (RFC 4180 quoting); json: an array of {"path", "predictions": [{"index",
// "class", "<score>"}], "error": null or the message}; jsonl: those objects one per line.
// `classNames` empty: a class is named by its index.
std::string formatPredictions(const std::vector<PredictRow>& rows,
                              const std::vector<std::string>& classNames, PredictFormat format,
                              ScoreKind scores, int topk);

}  // namespace fixres::engine
