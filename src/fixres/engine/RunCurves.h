// The curves of a train or finetune run, read back from its metrics.jsonl, and the picture
// `fixres plot` draws of them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::engine {

// plot's positional run folder (required).
inline constexpr Setting kPlotRunDirRow{"",       "run_dir",
                                        "Inputs", "Run folder of fixres train or finetune",
                                        {},       SettingRole::kInvocation,
                                        "plot"};

struct RunCurves {
  // Progress records (those with "step" and "loss"), by optimizer step. A loss that was not
  // finite (null in the file) is NaN.
  std::vector<double> steps, loss, learningRate;
  // Top-1 (percent) per epoch of each object of the epoch records that has a "top1": "train"
  // (the running top-1 of the training batches), "eval" (held-out), and any other (e.g. the
  // weights' EMA). The evaluation before fine-tuning ("phase": "before") is eval's epoch 0.
  struct EpochSeries {
    std::vector<double> epochs, top1;
  };
  std::map<std::string, EpochSeries> top1;
  // The evaluated split's own name ("val", "holdout": the records' eval.split), named in the
  // legend; "" in runs written before it was recorded ("held-out" then).
  std::string evalSplit;
  size_t records = 0;  // records read
};

// Reads `path` (a metrics.jsonl). DataError naming the file when it cannot be read (also when it
// is not a regular file or is larger than kMetricsLogMaxBytes, MetricsLog.h), and naming
// file:line for a line that is not a JSON object (a last line without its newline that does not
// parse, the trace of a write cut short, is skipped with a warning).
RunCurves readRunCurves(const std::string& path);

// One SVG document, stacked panels: loss and learning rate against the step, top-1 against the
// epoch (each series that has points). DataError when the run has no progress record yet.
std::string runCurvesSvg(const RunCurves& curves, const std::string& title);

}  // namespace fixres::engine
