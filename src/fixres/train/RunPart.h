// The seam where a feature joins a training run: a RunPart is called at the run's start, at the
// end of each epoch (after its evaluation, with the epoch's metrics.jsonl record) and after each
// checkpoint write; what it must keep across a restart it keeps in the run folder. A part is one
// file (its options with their rows, its class) plus one line in RunParts.cpp; the Trainer knows
// parts only through this interface.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixres/engine/Evaluator.h"
#include "fixres/step/Checkpoint.h"

namespace fixres::engine {

struct RunConfig;

// Where the run stands when a part is called.
struct RunMoment {
  const CheckpointState& state;  // epoch: epochs done (at an epoch's end, with this one)
  const std::string& runDir;
  int rank = 0;
};

class RunPart {
 public:
  virtual ~RunPart() = default;
  virtual const char* name() const = 0;
  // Before the first step (after a resume, `resumed`): checks what the part needs of the run
  // (UsageError naming the flag) and reads back what it kept.
  virtual void start(const RunMoment& at, bool resumed, bool hasValidation) {}
  // At an epoch's end, before its checkpoint: `eval` is the epoch's evaluation (nullptr when the
  // epoch was not evaluated); the part may add to `record`, the epoch's metrics.jsonl line.
  virtual void epochEnd(const RunMoment& at, const EvalResult* eval, nlohmann::json& record) {}
  // After a checkpoint write on rank 0: `epochFile` is the epoch's own checkpoint
  // (checkpoint_<e>.pth), "" for a write of checkpoint.pth alone (mid-epoch, before exiting).
  virtual void checkpointWritten(const RunMoment& at, const std::string& epochFile) {}
};

// The parts `config` turns on, in RunParts.cpp's order.
std::vector<std::unique_ptr<RunPart>> makeRunParts(const RunConfig& config);

}  // namespace fixres::engine
