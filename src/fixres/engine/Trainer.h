// The training loop for `fixres train` and `fixres finetune`: a class with a serializable
// state (CheckpointState) that resumes exactly, seeing distributed only through the gradient
// reducer and metric sums.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>

#include "fixres/data/Dataset.h"
#include "fixres/data/Loader.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Checkpoint.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/engine/Schedule.h"
#include "fixres/engine/TrainStep.h"
#include "fixres/models/ResNet.h"

namespace fixres::engine {

struct RunSummary {
  EvalResult before;  // finetune: evaluation before training (count 0 when not run)
  EvalResult after;   // evaluation after the last epoch (count 0 without a val set)
  int64_t steps = 0;
  double seconds = 0;
  bool stoppedEarly = false;  // --stop-after-steps reached, or a stop signal
  int stopSignal = 0;         // SIGTERM / SIGINT when the run stopped on one
};

class Trainer {
 public:
  // Opens the datasets, builds the model (config.model) on run.device, the step and schedule.
  Trainer(RunConfig config, distributed::Communicator& comm, RunDevice run);
  RunSummary run();

  models::ResNet& model() { return model_; }
  const CheckpointState& state() const { return state_; }

 private:
  // Why a run stops before its last epoch.
  struct Stop {
    std::string why;            // "--stop-after-steps", "SIGTERM", "SIGINT"
    int signal = 0;             // the signal, when one
    bool checkpointed = false;  // the epoch-end checkpoint already holds this state
  };

  void prepareRunFolder();
  bool resume();
  void evaluateBeforeTraining();
  data::Loader makeTrainLoader();
  int64_t startEpoch(data::Loader& loader);  // returns the epoch's optimizer steps
  std::optional<Stop> trainEpoch(data::Loader& loader, int64_t iterations);
  bool trainStep(data::Loader& loader, double lr, double& loss, int64_t& images);
  void finishEpoch();
  RunSummary stopRun(const Stop& stop, int64_t iterations);
  RunSummary summarize();

  EvalResult evaluateNow();
  void writeCheckpoints(bool epochEnd);
  void logProgress(int64_t iteration, int64_t iterations, double loss, double lr, double imgPerSec,
                   double etaSeconds);
  void appendMetrics(const nlohmann::json& line);
  std::optional<Stop> agreedStop();

  RunConfig cfg_;
  distributed::Communicator& comm_;
  RunDevice run_;
  models::ResNet model_{nullptr};
  std::shared_ptr<const data::Dataset> train_, val_;
  image::TransformOptions trainTransform_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<Schedule> schedule_;
  CheckpointState state_;
  double scaledLr_ = 0;
  std::ofstream metrics_;
  RunSummary summary_;
  int64_t stepsAtStart_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fixres::engine
