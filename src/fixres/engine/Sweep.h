// The resolution sweep of `fixres sweep`: top-1 at each test resolution, optionally after FixRes
// fine-tuning at each one (a `fixres finetune` run with the sweep's model, evaluation settings and
// numerics), the best resolutions, and sweep.json and sweep.svg (the train resolution, the
// apparent-size suggestion and the best resolutions marked).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/engine/Numerics.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::engine {

struct SweepOptions {
  ModelSpec model;  // with its weights (weightPath)
  EvalSettings eval;
  NumericsOptions numerics;  // the fine-tuning runs' (the evaluations use the RunDevice's)
  std::string imnetPath;     // holds `split` and, for fine-tuning, train/
  std::string split = "holdout";
  std::vector<int> sizes;  // the test resolutions, in order (at least one)
  int trainSize = 224;
  bool finetune = false;
  int finetuneEpochs = 1;
  int64_t finetuneIterations = -1;  // cap per epoch (-1: the whole train split)
  double finetuneLr = 1e-3;         // the base rate, scaled as FixRes unless absoluteLr
  bool absoluteLr = false;
  uint64_t seed = 0;
  std::string out = "sweep";  // sweep.json, sweep.svg and finetune_<size>/ go here

  // The fine-tuning run at `size`, in out/finetune_<size>.
  RunConfig finetuneRun(int size) const;
  // With finetune: everything a fine-tuning run needs (RunConfig::validate), checked before the
  // first evaluation.
  void validate() const;
};

struct SweepRow {
  int size = 0;
  EvalResult plain;              // without fine-tuning
  EvalResult finetuned;          // with finetune: after the fine-tuning run at this size
  std::string finetunedWeights;  // with finetune: that run's checkpoint
};

struct SweepResult {
  std::vector<SweepRow> rows;  // one per size, in order
  double suggested = 0;        // the apparent-size suggestion for the train size
  size_t bestPlain = 0;        // index into rows of the best top-1 without fine-tuning
  size_t bestFinetuned = 0;    // with finetune: the same after fine-tuning
};

// Evaluates options.model at every size (and with finetune, fine-tunes it there in a locked run
// folder, then evaluates the result); a collective of every rank of `comm`. Rank 0 creates
// options.out. `onRow` is called on every rank as each row is complete.
SweepResult runSweep(const SweepOptions& options, distributed::Communicator& comm,
                     const RunDevice& run,
                     const std::function<void(const SweepRow&)>& onRow = nullptr);

// sweep.json's document and sweep.svg's plot of a sweep.
nlohmann::json sweepJson(const SweepOptions& options, const SweepResult& result);
std::string sweepSvg(const SweepOptions& options, const SweepResult& result);
// Writes options.out/sweep.svg, then options.out/sweep.json (each atomically).
void writeSweep(const SweepOptions& options, const SweepResult& result);

}  // namespace fixres::engine
