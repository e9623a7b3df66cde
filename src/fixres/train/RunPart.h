// The seam where a feature joins a training run: a RunPart is called at the run's start and when
// its folder is opened, with each metrics record, after optimizer steps it asks for, after each
// evaluation of the run's weights (with the epoch's metrics.jsonl record and log line), after each
// checkpoint write, and it puts its own state in checkpoints (CheckpointExtra). What it keeps
// outside checkpoints it keeps in the run folder. A part is one file (its class and maker) plus one
// line in RunParts.cpp; its options are nested in RunConfig with their rows. The Trainer knows
// parts only through this interface.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/models/Model.h"
#include "fixres/step/Checkpoint.h"

namespace fixres::engine {

struct RunConfig;
struct RunSummary;

// Where the run stands when a part is called.
struct RunMoment {
  const CheckpointState& state;  // epoch: epochs done (at an epoch's end, with this one)
  const std::string& runDir;
  int rank = 0;
};

// What the Trainer lends its parts when they are made.
struct RunServices {
  distributed::Communicator& comm;
  // A second model built as the run's was (same architecture, file, layout, device; the same
  // seed, so that building it leaves torch's generator where the run's build left it).
  std::function<models::Model()> buildModel;
  // `model` evaluated on the validation set as the run's weights are.
  std::function<EvalResult(models::Model& model)> evaluate;
};

// One evaluation of the run's weights, as the parts see it.
struct Evaluation {
  const EvalResult& result;  // the run's weights
  nlohmann::json* record;    // the epoch's metrics.jsonl line (nullptr: after the run)
  std::string* logLine;      // the epoch's log line, to append to (nullptr likewise)
  RunSummary& summary;       // what the command prints at the end
};

class RunPart {
 public:
  virtual ~RunPart() = default;
  virtual const char* name() const = 0;
  // Before the first step (after a resume, `resumed`): checks what the part needs of the run
  // (UsageError naming the flag) and reads back what it kept in the run folder.
  virtual void start(const RunMoment& at, bool resumed, bool hasValidation) {}
  // Rank 0 opened the run folder (config.json and metrics.jsonl written or reopened), after
  // start() on every rank.
  virtual void opened(const RunMoment& at, bool resumed) {}
  // Rank 0 appended `record` (rounded as metrics.jsonl holds it) to metrics.jsonl.
  virtual void recorded(const RunMoment& at, const nlohmann::json& record) {}
  // Whether the part acts after the step just counted (at.state.iteration steps done in the
  // epoch): the Trainer then reads the steps' device-side counts first, so that `applied` is known.
  virtual bool actsAfterStep(const RunMoment& at) const { return false; }
  virtual void stepEnd(const RunMoment& at, models::Model& model, bool applied) {}
  // After the run's weights were evaluated (each evaluated epoch's end, and after the run when
  // its last epoch was not evaluated).
  virtual void evaluated(const RunMoment& at, Evaluation& e) {}
  // At an epoch's end, before its checkpoint: `eval` is the epoch's evaluation (nullptr when the
  // epoch was not evaluated); the part may add to `record`, the epoch's metrics.jsonl line.
  virtual void epochEnd(const RunMoment& at, const EvalResult* eval, nlohmann::json& record) {}
  // After a checkpoint write on rank 0: `epochFile` is the epoch's own checkpoint
  // (checkpoint_<e>.pth), "" for a write of checkpoint.pth alone (mid-epoch, before exiting).
  virtual void checkpointWritten(const RunMoment& at, const std::string& epochFile) {}
  // Its state in checkpoints, saved and restored with the run's (nullopt: none).
  virtual std::optional<CheckpointExtra> checkpointState() { return std::nullopt; }
  // False while an update of the part's state was interrupted (by an error): nothing may be saved.
  virtual bool consistent() const { return true; }
};

// The parts `config` turns on, in RunParts.cpp's order.
std::vector<std::unique_ptr<RunPart>> makeRunParts(const RunConfig& config,
                                                   const RunServices& services);

}  // namespace fixres::engine
