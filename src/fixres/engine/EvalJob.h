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
  std::string json;                    // the file the command writes document() to, "" for none
  int64_t limit = -1;                  // only the first N images
  EvalSettings eval;
  data::FileIndexOptions fileIndex;

  // UsageError naming the flags: no images (--imnet-path or --dataset-path) or no weights;
  // --labels-csv without --dataset-path or naming no file; --fit-temperature without --report.
  void validate() const;

  // eval's own flags, one row each (common/Setting.h; validate() holds the rules between them).
  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    v(Setting{"",
              "--labels-csv",
              "Data",
              "Labels of a flat folder of images (--dataset-path): file,label rows, such as "
              "ImageNet's LOC_val_solution.csv",
              {},
              kInvocation,
              "eval"},
      r.labelsCsv);
    v(Setting{"", "--limit", "Data", "Only the first N images (-1: all)",
              Range::integers(1).orValue(-1, "all"), kInvocation, "eval"},
      r.limit);
    v(Setting{"",
              "--json",
              "Output",
              "Also write the results to this JSON file",
              {},
              kInvocation,
              "eval"}
          .writtenTo(),
      r.json);
    v(Setting{"",
              "--report",
              "Output",
              "Also write per-class accuracy, the confusion matrix (CSV, SVG heat map), the "
              "expected calibration error and a reliability diagram into this folder (one "
              "sub-folder per size when several)",
              {},
              kInvocation,
              "eval"}
          .writtenTo(),
      r.report);
    v(Setting{"",
              "--fit-temperature",
              "Output",
              "Fit the softmax temperature on this held-out dataset and report the scaled "
              "probabilities' calibration too (with --report)",
              {},
              kInvocation,
              "eval"},
      r.heldOut);
  }
};

// What the sizes evaluated gave: each result's JSON, the best top-1, the last size's report.
struct EvalOutcome {
  nlohmann::json results = nlohmann::json::array();
  double bestTop1 = 0;
  int64_t bestCount = 0;  // the images behind bestTop1
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
