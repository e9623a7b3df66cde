// `fixres eval` as an engine job (main_evaluate_imnet): top-1, top-5 and loss at one or several
// test resolutions, sharded exactly over the ranks, with an optional report folder per size and a
// held-out temperature fit. Constructed from what the command was given, it resolves the model
// (ModelResolution.h) and opens the datasets before a rank connects; run() evaluates size after
// size until done or stopped by a signal; the command prints each result as it comes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"
#include "fixres/data/FileIndex.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/EvalReport.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelResolution.h"

namespace fixres::engine {

struct EvalRequest {
  ModelRequest model;  // model.spec.weightPath is required; model.sizes: --input-size's list
  std::string imnetPath, datasetPath;  // the images: <imnet>/val or the dataset folder
  std::string labelsCsv;               // labels of a flat folder (--labels-csv)
  std::string report;                  // the report folder, "" for none
  std::string heldOut;                 // --fit-temperature's dataset, "" for none
  int64_t limit = -1;                  // only the first N images
  EvalSettings eval;
  data::FileIndexOptions fileIndex;
};

// What the sizes evaluated gave: each result's JSON, the best top-1, the last size's report.
struct EvalOutcome {
  nlohmann::json results = nlohmann::json::array();
  double bestTop1 = 0;
  std::optional<ClassReport> lastReport;
  int signal = 0;  // the stop signal that ended it, 0 when every size was evaluated
};

class EvalJob {
 public:
  // UsageError without images or weights; DataError for a dataset that cannot be read, a labels
  // file or held-out folder whose classes differ.
  explicit EvalJob(const EvalRequest& request);
  const ResolvedModel& model() const { return model_; }
  // Every size in turn, `onResult` called on every rank after each. A collective of every rank.
  EvalOutcome run(const RunDevice& device, distributed::Communicator& comm,
                  const std::function<void(const EvalResult&)>& onResult) const;
  // The --json document: the settings and every size's result, marked partial after a signal.
  nlohmann::json document(const EvalOutcome& outcome) const;
  // DataError explaining a likely class-order mismatch when top-1 is near chance although the run
  // that made the weights recorded much better.
  void checkClassOrder(const EvalOutcome& outcome) const;

 private:
  EvalResult reportSize(models::Model& model, const EvalOptions& o, int size,
                        distributed::Communicator& comm, std::optional<ClassReport>& kept) const;

  EvalRequest request_;
  ResolvedModel model_;
  std::shared_ptr<const data::Dataset> dataset_, heldOut_;
};

}  // namespace fixres::engine
