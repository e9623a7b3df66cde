// EMA weights (--model-ema), as torchvision 0.14's classification references keep them: their
// ExponentialMovingAverage, i.e. torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_avg,
// use_buffers=True) with ema_avg(avg, p, n) = decay * avg + (1 - decay) * p, applied to every
// parameter AND buffer. The averaged copy is a second model on the model's device.
#pragma once

#include <ATen/core/Dict.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "fixres/common/Setting.h"
#include "fixres/models/Model.h"
#include "fixres/step/Checkpoint.h"

namespace fixres::engine {

// The references' decay adjustment (after pycls): adjust = world_size x batch x ema_steps /
// epochs, alpha = min(1, (1 - decay) x adjust), returns 1 - alpha. `batch` is the images of one
// optimizer step on one process (per-process batch x accumulation steps).
double adjustedEmaDecay(double decay, int64_t worldSize, int64_t batch, int64_t emaSteps,
                        int64_t epochs);

struct EmaOptions {
  bool enabled = false;       // --model-ema: a run keeps EMA weights
  double decay = 0.99998;     // --model-ema-decay, before adjustment
  int64_t steps = 32;         // --model-ema-steps: update after every this many optimizer steps
  double warmupEpochs = 0;    // --warmup-epochs: averaging restarts after each update before it
  double adjustedDecay = -1;  // the decay applied (adjustedEmaDecay); < 0: `decay` itself

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    v(Setting{"model_ema", "--model-ema", "Optimisation",
              "Keep EMA weights (torchvision references' ExponentialMovingAverage over parameters "
              "and buffers), evaluated beside the raw weights and saved as model_ema"},
      o.enabled);
    v(Setting{"model_ema_decay", "--model-ema-decay", "Optimisation",
              "EMA decay before the references' adjustment by processes x batch x accumulation x "
              "--model-ema-steps / --epochs",
              Range::reals(0, 1)},
      o.decay);
    v(Setting{"model_ema_steps", "--model-ema-steps", "Optimisation",
              "Optimizer steps between EMA updates", Range::integers(1, 1 << 30)},
      o.steps);
  }

  // UsageError naming --model-ema-decay / --model-ema-steps for values out of range.
  void validate() const;
  double appliedDecay() const { return adjustedDecay >= 0 ? adjustedDecay : decay; }
};

class ModelEma {
 public:
  // `average`: a model of the same architecture (and layout) as the one averaged, on the
  // device the average lives on; its values are replaced by the first update.
  ModelEma(models::Model average, EmaOptions options);

  // The references' rule after optimizer step `iteration` (0-based in the epoch) of `epoch`:
  // update when iteration % steps == 0; during warm-up (epoch < warmupEpochs) n_averaged goes
  // back to 0 after the update, so the next update copies again. Returns whether it updated.
  bool afterStep(const torch::nn::Module& model, int64_t epoch, int64_t iteration);

  // AveragedModel.update_parameters: with n_averaged == 0 a copy of the model's parameters and
  // buffers, else decay x avg + (1 - decay) x p for each, computed as PyTorch does: for an
  // integer buffer (num_batches_tracked) in float32 and truncated back to the integer, as
  // copy_ does. n_averaged += 1.
  void update(const torch::nn::Module& model);
  void restartAveraging() { nAveraged_ = 0; }

  int64_t nAveraged() const { return nAveraged_; }
  models::Model& model() { return average_; }
  const EmaOptions& options() const { return o_; }

  // AveragedModel's state_dict: "n_averaged" (int64, 0-d), then "module.<name>" for each
  // parameter and buffer (detached CPU copies). What torchvision's train.py stores as
  // checkpoint["model_ema"] and loads back with model_ema.load_state_dict.
  c10::Dict<std::string, at::Tensor> stateDict() const;
  // The inverse of stateDict (copying the values into the average, n_averaged restored).
  // WeightsError naming `source` when `value` is not such a dict or does not match the model.
  void loadStateDict(const c10::IValue& value, const std::string& source);
  // Its place in checkpoints: stateDict() as `model_ema`; a checkpoint without one (a run without
  // --model-ema) restarts the averaging at the next update, with a warning.
  CheckpointExtra checkpointState();

 private:
  models::Model average_;
  EmaOptions o_;
  int64_t nAveraged_ = 0;
};

}  // namespace fixres::engine
