// Timing the real training step and inference forward passes on one fixed batch, for `fixres
// bench train` and `fixres bench eval`.
#pragma once

#include <torch/torch.h>

#include "fixres/distributed/Communicator.h"
#include "fixres/models/Model.h"
#include "fixres/runtime/Numerics.h"
#include "fixres/step/TrainStep.h"

namespace fixres::engine {

// How many times a benchmark runs what it times: the rows of `fixres bench train`, `bench eval`
// and `bench allreduce`.
struct BenchLoop {
  int steps = 10;  // timed iterations
  int warmup = 2;  // untimed iterations first

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    static constexpr CommandHelp kStepsHelp[] = {{"bench train", "Timed training steps"},
                                                 {"bench eval", "Timed batches"},
                                                 {nullptr, nullptr}};
    v(Setting{"", "--steps", "Options", "Timed iterations", Range::integers(1, 1000000),
              kInvocation, "bench train,bench eval", "", kStepsHelp},
      o.steps);
    v(Setting{"", "--iters", "Options", "Timed iterations", Range::integers(1, 1000000),
              kInvocation, "bench allreduce"},
      o.steps);
    v(Setting{"", "--warmup", "Options", "Untimed iterations first", Range::integers(0, 1000000),
              kInvocation, "bench train,bench eval"},
      o.warmup);
  }
};

struct StepTimings {
  double seconds = 0;  // wall time of the timed steps, from a barrier to the barrier after them
  // Each phase of TrainStep::step() summed over the timed steps: begin (buffers from rank 0),
  // forward and backward (all-reduces launched from its hooks), finish (waiting for the
  // all-reduces, checks, update).
  double begin = 0, backward = 0, finish = 0;
};

// `step` in training mode on images `x` and labels `y`: `warmup` untimed steps, the device
// synchronised and the ranks at a barrier, then `steps` timed ones as TrainStep::step() runs its
// phases, timed apart, and the device and ranks synchronised again. A collective of every rank of
// `comm`.
StepTimings timeTrainSteps(TrainStep& step, const torch::Tensor& x, const torch::Tensor& y,
                           int warmup, int steps, distributed::Communicator& comm,
                           const torch::Device& device);

struct EvalTimings {
  double seconds = 0;   // wall time of the timed batches
  double checksum = 0;  // the sum of their logits (not finite: the model's outputs are not)
};

// `model` in eval mode, without gradients, under run's autocast: `warmup` untimed forward passes
// of `x`, then `steps` timed ones. The logits add up on the device; reading the sum waits for
// every batch queued so far (no per-batch synchronisation, as in PyTorch's eager loop).
EvalTimings timeEvalBatches(models::Model& model, const torch::Tensor& x, int warmup, int steps,
                            const RunDevice& run);

}  // namespace fixres::engine
