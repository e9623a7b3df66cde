// Option groups of the run subcommands (train, finetune, eval, extract), each declared once.
#pragma once

#include <CLI/CLI.hpp>

#include "fixres/cli/Options.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/models/ResNet.h"

namespace fixres::cli {

struct ModelFlags {
  std::string architecture = "ResNet50";
  std::string weightPath;
  int64_t numClasses = 0;
  bool skipClassifier = false;
};
// --architecture, --weight-path/--resnet-weight-path, --num-classes, --skip-classifier
void addModelOptions(CLI::App& app, ModelFlags& flags);

// Everything train and finetune share, bound straight to the run configuration (whose current
// values are the defaults shown by --help).
void addTrainingOptions(CLI::App& app, engine::RunConfig& cfg, ModelFlags& model,
                        std::string& imnetPath);

// The device of this rank: cuda:<local rank> when CUDA is available and not disabled.
torch::Device deviceFor(const distributed::WorldInfo& world, bool cpuOnly);

// <shared>/<mode>/<job-id>
std::string runFolder(const std::string& sharedFolder, const std::string& mode,
                      const std::string& jobId);

// Resolves the world, connects, and returns the communicator (single process: no store).
std::unique_ptr<distributed::Communicator> connectWorld(const ClusterOptions& cluster,
                                                        distributed::WorldInfo& world, bool cuda);

// The --architecture model sized for the flags (or the dataset's classes), with --weight-path
// loaded (UsageError naming `command` when it is missing), on `device`.
models::ResNet loadModel(const ModelFlags& flags, int64_t datasetClasses, torch::Device device,
                         const std::string& command);

// What eval and extract share: --resize-mode, --batch, --workers, --test-flip, --precision,
// --memory-format, --cpu.
struct EvalFlags {
  std::string resizeMode = "fixres";
  int64_t batch = 64;
  int workers = 4;
  bool testFlip = false;
  std::string precision = "auto";
  std::string memoryFormat = "auto";
  std::string normalizeOn = "auto";
  bool cpu = false;
};
void addEvalFlags(CLI::App& app, EvalFlags& flags);

// --precision and --memory-format (in `group`); with `normalizeOn`, also --normalize-on (in
// "Data"). One declaration for train, finetune, eval, extract and bench.
void addNumericsOptions(CLI::App& app, std::string& precision, std::string& memoryFormat,
                        std::string* normalizeOn, const std::string& group);

// Evaluation options of the val transform at `size` (UsageError on a bad --resize-mode).
engine::EvalOptions valOptions(int size, const EvalFlags& flags, torch::Device device);

// "224,288,320" -> {224, 288, 320}; UsageError naming the flag on anything else.
std::vector<int> parseSizes(const std::string& text, const std::string& flag);

}  // namespace fixres::cli
