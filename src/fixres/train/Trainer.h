// The training loop for `fixres train` and `fixres finetune`: a class with a serializable
// state (CheckpointState) that resumes exactly, seeing distributed only through the gradient
// reducer and metric sums.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <optional>

#include "fixres/data/Dataset.h"
#include "fixres/data/Loader.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/MetricsLog.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/models/Model.h"
#include "fixres/runtime/DevicePrefetcher.h"
#include "fixres/step/BatchMix.h"
#include "fixres/step/Checkpoint.h"
#include "fixres/step/Schedule.h"
#include "fixres/step/TrainStep.h"
#include "fixres/train/RunPart.h"

namespace fixres::engine {

struct RunSummary {
  EvalResult before;    // finetune: evaluation before training (count 0 when not run)
  EvalResult after;     // evaluation after the last epoch (count 0 without a val set)
  EvalResult afterEma;  // the same for the EMA weights (count 0 without --model-ema)
  int64_t steps = 0;
  double seconds = 0;
  bool stoppedEarly = false;  // --stop-after-steps reached, or a stop signal
  int stopSignal = 0;         // the signal (SIGTERM, SIGINT, ...) when the run stopped on one
  std::string split;          // the evaluated folder's name ("val", "holdout")
};

// Every way a run ends after its training began leaves a checkpoint of its last completed step
// when one can be saved (never a half-applied step, never weights that are not finite): a stop
// (--stop-after-steps, a stop signal) returns a summary; a step whose loss or gradient is not
// finite (--nan-policy stop) throws an Error with exit code 1 naming the step; any other error
// (data, distributed, a write) is rethrown as it came.
class Trainer {
 public:
  // Opens the datasets, builds the model (config.model) on run.device, the step and schedule.
  Trainer(RunConfig config, distributed::Communicator& comm, RunDevice run);
  // Resumes from the run folder's checkpoint when there is one (UsageError listing the settings
  // that define the run and differ, unless config.allowConfigChange), then writes config.json
  // and trains.
  RunSummary run();

  models::Model& model() { return model_; }
  const CheckpointState& state() const { return state_; }

 private:
  // The evaluated split's folder name ("val", "holdout"), as logs and metrics.jsonl name it.
  std::string splitName() const;
  // Rank 0's first line: the run folder, the model and size, the data, the batch and epochs.
  void logHeader(bool resumed) const;
  // Why a run stops before its last epoch.
  struct Stop {
    std::string why;    // "--stop-after-steps 3", "SIGTERM", "a loss that is not finite"
    int signal = 0;     // the signal, when one
    std::string error;  // when set, the run fails (exit code 1) with this message after saving
  };
  enum class StepOutcome { kDone, kSkippedOnHost, kNoData };
  // What the steps since the last progress line add up to.
  struct StepTally {
    int64_t images = 0;          // this rank's training images
    double dataWaitSeconds = 0;  // time spent waiting for the next batch on the device
  };
  // What the epoch's steps read so far add up to (TrainStep::takeWindow).
  struct EpochCounts {
    double lossSum = 0;  // the losses of the steps not skipped
    int64_t lossCount = 0, skipped = 0, overflows = 0;
    bool lastApplied = false;  // the last step read was applied
  };

  bool resume();
  void checkResumable(const CheckpointState& stored) const;
  void startRunFolder(bool resumed);
  void evaluateBeforeTraining();
  data::Loader makeTrainLoader();
  std::optional<Stop> train(data::Loader& loader);
  int64_t startEpoch(data::Loader& loader);  // returns the epoch's optimizer steps
  std::optional<Stop> trainEpoch(data::Loader& loader, int64_t iterations);
  StepOutcome trainStep(DevicePrefetcher& batches, double lr, StepTally& tally);
  // Reads the steps not read yet into epoch_ (TrainerProgress.cpp): warns of skipped steps, and
  // when one halted the run takes the counts back to the step before it and returns the Stop.
  std::optional<Stop> readSteps();
  // The progress line and metrics record after `iteration` of `iterations`.
  void reportProgress(int64_t iterations, double lr, double epochSeconds, int64_t done,
                      const StepTally& epochTally, const StepTally& window, double windowSeconds);
  void finishEpoch();
  RunSummary stopRun(const Stop& stop);
  void saveBeforeExit();
  RunSummary summarize();

  EvalResult evaluateNow();
  // Evaluates the raw weights (summary_.after) and, with --model-ema, the EMA (afterEma).
  // Evaluates the run's weights (summary_.after), adds them to `record` and `line` (when given),
  // then lets the parts add theirs (the EMA's).
  void evaluateAfter(nlohmann::json* record = nullptr, std::string* line = nullptr);
  // The parts' states for a checkpoint (CheckpointExtra).
  CheckpointExtras partStates();
  void writeCheckpoints(bool epochEnd);
  OptimizerRef optimizerRef();
  RunMoment moment() const { return RunMoment{state_, cfg_.runDir, comm_.rank()}; }
  void logProgress(int64_t iteration, int64_t iterations, double loss, double lr, double imgPerSec,
                   double dataWaitShare, double etaSeconds, double runEtaSeconds);
  void appendMetrics(const nlohmann::json& line);
  std::optional<Stop> stepLimit() const;
  std::optional<Stop> agreedStop();

  RunConfig cfg_;
  distributed::Communicator& comm_;
  RunDevice run_;
  models::Model model_{nullptr};
  std::shared_ptr<const data::Dataset> train_, val_;
  image::TransformOptions trainTransform_;
  // The run's evaluations (its own and its parts'): the val transform of its preprocessing record
  // at the evaluation size, made once.
  EvalOptions evalOptions_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<BatchMix> mix_;                // --mixup-alpha / --cutmix-alpha
  std::vector<std::unique_ptr<RunPart>> parts_;  // RunPart.h
  std::unique_ptr<Schedule> schedule_;
  CheckpointState state_;
  double scaledLr_ = 0;
  std::unique_ptr<MetricsLog> metrics_;  // rank 0
  bool unsaved_ = false;  // state_ has moved on since the last checkpoint written or read
  bool saving_ = false;   // a checkpoint write is under way (or failed)
  EpochCounts epoch_;
  RunSummary summary_;
  int64_t stepsAtStart_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fixres::engine
