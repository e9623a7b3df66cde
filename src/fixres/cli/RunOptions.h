// Option groups of the run subcommands (train, finetune, eval, extract, sweep, bench), bound
// directly to the engine's typed options, and the per-rank set-up they share.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/cli/Flags.h"
#include "fixres/cli/Options.h"
#include "fixres/data/FileIndex.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::cli {

// --architecture, --weight-path/--resnet-weight-path, --num-classes, --skip-classifier, the
// EfficientNet and preprocessing options, the download options and --pretrained NAME (the
// catalogue's URL and checksum become --weight-path; its architecture, filter and normalisation
// apply where not given; exit 2 for an unknown name or a conflicting --architecture).
void addModelOptions(CLI::App& app, engine::ModelSpec& spec);

// --cache-dir (default: $XDG_CACHE_HOME/fixres, else $HOME/.cache/fixres) and
// --download-timeout; the progress bar when stderr is a terminal.
void addDownloadOptions(CLI::App& app, DownloadOptions& download);

// A benchmark's numerics: --precision, --memory-format and, where the command offers it,
// --runtime (the inference commands bind NumericsRequest, the training runs RunConfig's rows).
void addNumericsOptions(CLI::App& app, engine::NumericsOptions& numerics);

// Everything train and finetune share (their defaults: RunConfig::forMode), --cpu included.
void addTrainingOptions(CLI::App& app, engine::RunConfig& cfg, std::string& imnetPath, bool& cpu);

// What eval, predict, extract, calibrate and sweep share: --batch, --workers, --test-flip, the
// numerics and --cpu, and the inference commands' test preprocessing rows (--resize-mode,
// --crop-pct: ModelRequest's, set only when given).
struct EvalFlags {
  engine::EvalSettings settings;
  engine::ModelRequest request;
  std::optional<int> inputSize;  // --input-size where the command takes one size
  engine::NumericsRequest numerics;
  bool cpu = false;
};
void addEvalFlags(CLI::App& app, EvalFlags& flags);

// Turns the image folder index on (kept in the folder, else in index/ of the default cache folder)
// and adds --no-index-cache, which turns it off.
void addIndexCacheFlag(CLI::App& app, data::FileIndexOptions& index);

// A rank of the job: its world, communicator and device (selected once, here).
struct Rank {
  distributed::WorldInfo world;
  std::unique_ptr<distributed::Communicator> comm;
  engine::RunDevice run;
};
// Resolves the world from the cluster flags and the environment, connects (single process: no
// store), and selects the device of the local rank with the numerics resolved for it.
Rank connectRank(const ClusterOptions& cluster, bool cpuOnly,
                 const engine::NumericsOptions& numerics);

// connectRank for an inference job's model: the evaluation flags' numerics, with the model
// folder's runtime and precision (a sweep's choice) where --runtime and --precision were not given.
Rank connectForModel(const ClusterOptions& cluster, const EvalFlags& eval,
                     const engine::ResolvedModel& model);

// What a command was given about its model (engine/ModelResolution.h): `spec`, the test
// preprocessing rows of `eval` and its --input-size as given, and `classNames`; the model
// folder's values or the command's defaults apply to the others.
engine::ModelRequest modelRequest(const EvalFlags& eval, const engine::ModelSpec& spec,
                                  const std::string& classNames = "");

}  // namespace fixres::cli
