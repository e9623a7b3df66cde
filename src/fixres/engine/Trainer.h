// The training loop for `fixres train` and `fixres finetune`: a class with a serializable
// state (CheckpointState) that resumes exactly, seeing distributed only through the gradient
// reducer and metric sums.
#pragma once

#include <torch/torch.h>

#include <fstream>
#include <memory>

#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
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
  Trainer(RunConfig config, distributed::Communicator& comm, torch::Device device);
  RunSummary run();

  models::ResNet& model() { return model_; }
  const CheckpointState& state() const { return state_; }

 private:
  EvalOptions evalOptions(int size) const;
  void writeCheckpoints(bool epochEnd);
  void logProgress(int64_t iteration, int64_t iterations, double loss, double lr, double imgPerSec,
                   double etaSeconds);
  void appendMetrics(const nlohmann::json& line);
  int agreedStopSignal();

  RunConfig cfg_;
  distributed::Communicator& comm_;
  torch::Device device_;
  models::ResNet model_{nullptr};
  std::shared_ptr<const data::Dataset> train_, val_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<Schedule> schedule_;
  CheckpointState state_;
  double scaledLr_ = 0;
  Precision precision_ = Precision::kFp32;
  bool channelsLast_ = false;
  bool normalizeOnDevice_ = false;
  std::ofstream metrics_;
};

}  // namespace fixres::engine
