// Training checkpoints: the FixRes layout {epoch, accuracy, model, optimizer, lr_scheduler}
// plus what an exact resume needs (iteration in the epoch, global step, sampler seed, the
// resolved config). Written by rank 0 atomically; `model` is a plain state dict that Python's
// torch.load reads.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

namespace fixres::engine {

struct CheckpointState {
  int64_t epoch = 0;       // epoch in progress (or the next one when iteration == 0)
  int64_t iteration = 0;   // batches done in that epoch
  int64_t globalStep = 0;  // optimizer steps done in the whole run
  double accuracy = -1;    // last top-1 on the validation set, -1 when none
  double learningRate = 0;
  std::string scheduleKind;
  uint64_t seed = 0;
  std::string configJson;
};

void saveCheckpoint(const std::string& path, const CheckpointState& state,
                    const torch::nn::Module& model, torch::optim::SGD& optimizer);

// Restores model weights, momentum buffers and the state. WeightsError when the file is
// unreadable, corrupt, or does not fit the model.
CheckpointState loadCheckpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::SGD& optimizer);

// The newest loadable checkpoint of a run folder: checkpoint.pth, else the highest
// checkpoint_<epoch>.pth (with a warning naming what was corrupt). nullopt when the folder has
// none at all.
std::optional<CheckpointState> resumeFromRunDir(const std::string& runDir, torch::nn::Module& model,
                                                torch::optim::SGD& optimizer);

}  // namespace fixres::engine
