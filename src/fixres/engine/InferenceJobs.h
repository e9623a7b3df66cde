// `fixres predict` and `fixres extract` as engine jobs, like CalibrationJob: constructed from what
// the command was given, a job resolves its model (ModelResolution.h: the model folder read once)
// and opens its images, every check done before a rank connects; run() then builds the model and
// works over the ranks. The command binds flags, constructs, connects, runs and prints.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/Predict.h"

namespace fixres::engine {

struct PredictRequest {
  ModelRequest model;               // model.spec.weightPath is required
  std::vector<std::string> inputs;  // files, folders, list files, "-" (data/ImageInputs.h)
  PredictOptions output;
  EvalSettings eval;
};

class PredictJob {
 public:
  // UsageError without weights or when the number of classes cannot be told; DataError when the
  // class names do not match it or an input is missing (`standardInput` is read for "-").
  PredictJob(const PredictRequest& request, std::istream& standardInput);
  const ResolvedModel& model() const { return model_; }
  int64_t classes() const { return classes_; }
  // Every image's row, on rank 0 (the other ranks get none). A collective of every rank.
  std::vector<PredictRow> run(const RunDevice& device, distributed::Communicator& comm) const;

 private:
  PredictRequest request_;
  ResolvedModel model_;
  int64_t classes_ = 0;
  std::shared_ptr<const data::Dataset> images_;
};

struct ExtractRequest {
  ModelRequest model;  // model.spec.weightPath is required
  std::string datasetPath;
  std::string savePath;  // the folder of the .npy files
  EvalSettings eval;
};

struct ExtractResult {
  int64_t images = 0, classes = 0, embedding = 0;
};

class ExtractJob {
 public:
  // UsageError without weights; DataError for a dataset that cannot be read.
  explicit ExtractJob(const ExtractRequest& request);
  const ResolvedModel& model() const { return model_; }
  // Writes labels.npy, <arch>_logits.npy, <arch>_softmax.npy and <arch>_embedding.npy on rank 0
  // (the folder made before the work). A collective of every rank.
  ExtractResult run(const RunDevice& device, distributed::Communicator& comm) const;

 private:
  ExtractRequest request_;
  ResolvedModel model_;
  std::shared_ptr<const data::Dataset> dataset_;
};

}  // namespace fixres::engine
