// Capturing the training step as CUDA graphs, and the rules that decide when a run can.
#include "fixres/step/StepGraph.h"

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/step/TrainStep.h"

#ifdef FIXRES_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace fixres::engine {

const ChoiceTable<GraphMode>& graphModes() {
  static const ChoiceTable<GraphMode> kTable = {
      "CUDA graph mode",
      {{"auto", GraphMode::kAuto}, {"on", GraphMode::kOn}, {"off", GraphMode::kOff}}};
  return kTable;
}

bool buildHasCudaGraphs() {
#ifdef FIXRES_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::string whyNoGraph(const GraphConditions& c) {
  if (!c.cuda) return "the step runs on the CPU";
  if (!c.buildHasGraphs) return "this build's LibTorch has no CUDA";
  if (c.worldSize > 1)
    return "several ranks: the gradient all-reduce starts from autograd hooks, bucket by bucket "
           "as gradients become ready, which a graph cannot replay";
  if (c.accumulationSteps > 1) return "--accumulation-steps: a step spans several micro-batches";
  if (c.syncBatchNorm) return "--sync-bn: BatchNorm statistics are all-reduced inside the forward";
  if (c.lossScaling) return "fp16 loss scaling decides and rescales on the host";
  if (!c.optimizer->capturable || c.impl != optim::OptimizerImpl::kFused)
    return "only SGD's fused kernel reads its learning rate from the device here (AdamW's step "
           "count and the foreach and loop paths' rates are host numbers)";
  if (!c.deviceSkip) return "the not-finite check is read on the host (--skip-on host)";
  return "";
}

bool planStepGraph(GraphMode mode, const GraphConditions& c, std::string* why) {
  why->clear();
  if (mode == GraphMode::kOff) return false;
  *why = whyNoGraph(c);
  FIXRES_CHECK(mode != GraphMode::kOn || why->empty(), UsageError, "--cuda-graph on: ", *why);
  return why->empty();
}

#ifdef FIXRES_WITH_CUDA

struct StepGraphs::Impl {
  struct Entry {
    at::cuda::CUDAGraph graph;
    torch::Tensor images, labels;  // the static inputs the graph reads
  };
  explicit Impl(TrainStep& s) : step(s), pool(at::cuda::graph_pool_handle()) {}

  // begin, backward, finish: what the graph holds.
  void oneStep(const Entry& e) {
    step.begin();
    step.backward(e.images, e.labels, 1.0);
    step.finish(0.0);  // the rate is read from graphLr_
  }

  std::unique_ptr<Entry> capture(const torch::Tensor& images, const torch::Tensor& labels) {
    auto e = std::make_unique<Entry>();
    e->images = images.clone();
    e->labels = labels.clone();
    torch::cuda::synchronize();
    {
      // Warm-up and capture on a side stream; the autocast cache off (a cached cast would
      // outlive the capture).
      c10::cuda::CUDAStreamGuard guard(
          c10::cuda::getStreamFromPool(false, images.device().index()));
      const bool cache = at::autocast::is_autocast_cache_enabled();
      at::autocast::set_autocast_cache_enabled(false);
      step.setWarmingUp(true);
      for (int i = 0; i < kWarmupSteps; ++i) oneStep(*e);
      step.setWarmingUp(false);
      torch::cuda::synchronize();
      // Thread-local capture: the loader's threads may call CUDA (pinned memory) meanwhile.
      e->graph.capture_begin(pool, cudaStreamCaptureModeThreadLocal);
      oneStep(*e);
      e->graph.capture_end();
      at::autocast::set_autocast_cache_enabled(cache);
    }
    torch::cuda::synchronize();
    log::info("captured the training step at ", images.sizes(), " as a CUDA graph");
    return e;
  }

  static constexpr int kWarmupSteps = 3;
  TrainStep& step;
  at::cuda::MempoolId_t pool;
  std::map<std::vector<int64_t>, std::unique_ptr<Entry>> entries;
};

StepGraphs::StepGraphs(TrainStep& step) : impl_(std::make_unique<Impl>(step)) {}

void StepGraphs::run(const torch::Tensor& images, const torch::Tensor& labels, double lr) {
  std::vector<int64_t> key(images.sizes().begin(), images.sizes().end());
  key.push_back(-1);
  key.insert(key.end(), labels.sizes().begin(), labels.sizes().end());
  key.push_back(static_cast<int64_t>(labels.scalar_type()));
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end())
    it = impl_->entries.emplace(key, impl_->capture(images, labels)).first;
  auto& e = *it->second;
  torch::NoGradGuard noGrad;
  e.images.copy_(images, /*non_blocking=*/true);
  e.labels.copy_(labels, /*non_blocking=*/true);
  impl_->step.graphLearningRate().fill_(lr);
  e.graph.replay();
}

#else

struct StepGraphs::Impl {};

StepGraphs::StepGraphs(TrainStep&) {
  FIXRES_CHECK(false, InternalError, "CUDA graphs need a CUDA build");
}

void StepGraphs::run(const torch::Tensor&, const torch::Tensor&, double) {}

#endif

StepGraphs::~StepGraphs() = default;

size_t StepGraphs::captured() const {
#ifdef FIXRES_WITH_CUDA
  return impl_->entries.size();
#else
  return 0;
#endif
}

}  // namespace fixres::engine
