// --cuda-graph: the training step captured once per input shape as a CUDA graph and replayed,
// as torch.cuda.graphs' whole-network capture: static input buffers filled by copy, warm-up
// steps on a side stream before the capture (skipped on the device: they change nothing), one
// memory pool shared by the graphs of every size. What a captured step needs (no host reads,
// the learning rate and the not-finite flag on the device) decides whether a run can capture;
// when it cannot, the step runs eagerly and the reason is logged once.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/optim/MultiTensorStep.h"
#include "fixres/optim/Optimizer.h"

namespace fixres::engine {

// auto: capture on a GPU when the step can be captured; on: capture or fail (UsageError naming
// the reason); off: eager steps.
enum class GraphMode { kAuto, kOn, kOff };
const ChoiceTable<GraphMode>& graphModes();  // auto, on, off

// What decides whether a step can be captured.
struct GraphConditions {
  bool cuda = false;            // the step runs on a GPU
  bool buildHasGraphs = false;  // this build's LibTorch has CUDA (and so CUDA graphs)
  int worldSize = 1;
  int accumulationSteps = 1;
  bool syncBatchNorm = false;
  bool lossScaling = false;  // fp16's dynamic loss scaling
  bool deviceSkip = false;   // the not-finite check stays on the device (--skip-on)
  optim::OptimizerKind optimizer = optim::optimizerNamed("sgd");
  optim::OptimizerImpl impl = optim::OptimizerImpl::kFused;  // resolved
};
// Whether this build can capture at all (a CUDA LibTorch).
bool buildHasCudaGraphs();
// "" when the step can be captured, else why not (the first reason that holds).
std::string whyNoGraph(const GraphConditions& c);
// Whether to capture under `mode`; `why` gets the reason not to ("" when capturing, or when off).
// UsageError for `on` when the step cannot be captured.
bool planStepGraph(GraphMode mode, const GraphConditions& c, std::string* why);

class TrainStep;

// The captured steps of one TrainStep (a CUDA build; elsewhere constructing one is an
// InternalError, as planStepGraph never asks for it there).
class StepGraphs {
 public:
  explicit StepGraphs(TrainStep& step);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  // One step on (images, labels) at learning rate `lr`: the graph of this shape replayed (captured
  // first, at the first step of each shape). Nothing is read back.
  void run(const torch::Tensor& images, const torch::Tensor& labels, double lr);
  size_t captured() const;  // graphs captured so far (one per input shape)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fixres::engine
