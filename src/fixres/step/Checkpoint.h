// Training checkpoints: the FixRes layout {epoch, accuracy, model, optimizer, lr_scheduler}
// plus what an exact resume needs (iteration in the epoch, global step, sampler seed, the
// resolved config). Written by rank 0 atomically; `model` is a plain state dict that Python's
// torch.load reads, `optimizer` a flat dict of tensors by parameter name (Optimizer.h: SGD's
// momentum buffers under the parameter names, as since 0.1.0; AdamW's and RMSprop's state under
// "<state>/<name>"), `optimizer_kind` its kind (absent: sgd) and `loss_scaler` the loss scaler's
// {scale, growth_tracker} when the run scales its loss; and what the run's training-loop parts
// keep (CheckpointExtra), each a dict under its own key: with --model-ema the EMA weights as
// `model_ema` (AveragedModel's state dict: n_averaged and module.*, as torchvision's references
// store it).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>

#include "fixres/optim/Optimizer.h"
#include "fixres/step/LossScaler.h"

namespace fixres::engine {

struct CheckpointState {
  int64_t epoch = 0;       // epoch in progress (or the next one when iteration == 0)
  int64_t iteration = 0;   // optimizer steps done in that epoch (all of them: its end-of-epoch
                           // evaluation and per-epoch checkpoint are still to do)
  int64_t globalStep = 0;  // optimizer steps done in the whole run
  double accuracy = -1;    // last top-1 on the validation set, -1 when none
  double learningRate = 0;
  std::string scheduleKind;
  uint64_t seed = 0;
  int64_t worldSize = 0;  // processes of the run; 0: not recorded (earlier versions)
  std::string configJson;
};

// Called with a checkpoint's state once its file is read and verified, before anything is copied
// into the model; it may throw to refuse the checkpoint (the error propagates).
using CheckpointCheck = std::function<void(const CheckpointState&)>;

// The optimizer side of a checkpoint: the optimizer, its kind (the layout of its state), and the
// loss scaler when the run has one.
struct OptimizerRef {
  torch::optim::Optimizer& optimizer;
  optim::OptimizerKind kind = optim::optimizerNamed("sgd");
  LossScaler* scaler = nullptr;
};

// What a training-loop part keeps in checkpoints: a dict of tensors under `key` (its checksum in
// the integrity record as <key>_crc32 and <key>_bytes, which every reader verifies). `load`
// restores it from the checkpoint's entry; `absent` runs when a checkpoint has none (one written
// by a run without the part).
struct CheckpointExtra {
  std::string key;
  std::function<c10::Dict<std::string, at::Tensor>()> save;
  std::function<void(const c10::IValue& value, const std::string& path)> load;
  std::function<void(const std::string& path)> absent;
};
using CheckpointExtras = std::vector<CheckpointExtra>;

void saveCheckpoint(const std::string& path, const CheckpointState& state,
                    const torch::nn::Module& model, const OptimizerRef& optimizer,
                    const CheckpointExtras& extras = {});

// Restores model weights, the optimizer's state, the loss scaler's and the checkpoint state.
// WeightsError when the file is unreadable, corrupt, or does not fit the model. An optimizer
// state of another kind (a resume with another --opt, allowed by `check`) is not restored: the
// optimizer starts fresh, with a warning; so does a loss scaler the checkpoint has no state for.
// Each of `extras` from its key (or told it is absent).
CheckpointState loadCheckpoint(const std::string& path, torch::nn::Module& model,
                               const OptimizerRef& optimizer, const CheckpointCheck& check = {},
                               const CheckpointExtras& extras = {});

// The epoch of an epoch checkpoint's file name ("checkpoint_<epoch>.pth"); nullopt for any other
// name, or digits too many for an int64.
std::optional<int64_t> epochCheckpointIndex(const std::string& fileName);

// The newest loadable checkpoint of a run folder: checkpoint.pth, else the highest
// checkpoint_<epoch>.pth (with a warning naming what was corrupt). nullopt when the folder has
// none at all. `check` sees the chosen checkpoint before it is loaded.
std::optional<CheckpointState> resumeFromRunDir(const std::string& runDir, torch::nn::Module& model,
                                                const OptimizerRef& optimizer,
                                                const CheckpointCheck& check = {},
                                                const CheckpointExtras& extras = {});

}  // namespace fixres::engine
