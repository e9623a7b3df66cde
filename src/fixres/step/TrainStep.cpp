// The data-parallel training step.
#include "fixres/step/TrainStep.h"

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/step/SyncBatchNorm.h"

namespace fixres::engine {
namespace {

// All elements of all (defined) floating-point tensors finite. One summing pass first (in float,
// or double for double tensors): a NaN or an infinity makes its tensor's sum NaN or infinite, so
// finite sums prove every element finite. A non-finite sum, which finite elements can also give
// by overflowing, is settled element by element. torch::isfinite alone costs several passes and
// allocations per tensor: a sixth of a ResNet-18 step at one thread.
bool allFinite(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> sums, floating;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.is_floating_point()) continue;
    floating.push_back(t);
    sums.push_back(t.sum(t.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat)
                       .to(torch::kDouble));
  }
  if (sums.empty() || torch::isfinite(torch::stack(sums)).all().item<bool>()) return true;
  std::vector<torch::Tensor> flags;
  for (const auto& t : floating) flags.push_back(torch::isfinite(t).all());
  return torch::stack(flags).all().item<bool>();
}

// Whether any (defined) gradient holds a NaN or an infinity, as a bool 0-dim tensor on their
// device. On a GPU: the largest magnitude of each, one multi-tensor kernel, finite exactly when
// all its elements are (and it cannot overflow as a sum can), read by nobody until the tally's
// read. On the CPU, where reading costs nothing, allFinite's one summing pass (the infinity norm
// costs LibTorch's CPU twice a sum's time).
torch::Tensor anyNotFinite(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> defined;
  for (const auto& g : grads)
    if (g.defined()) defined.push_back(g);
  if (defined.empty()) return torch::zeros({}, torch::kBool);
  if (defined[0].device().is_cpu())
    return torch::full({}, !allFinite(defined), torch::TensorOptions().dtype(torch::kBool));
  return torch::isfinite(torch::stack(at::_foreach_norm(defined, INFINITY))).all().logical_not();
}

// Where a step's values that are not finite are dropped, and why not on the device ("" when it
// can be): a fused kernel takes found_inf; loss scaling decides on the host.
std::string whyHostSkip(const StepOptions& o, bool lossScaling) {
  if (optim::resolveOptimizerImpl(o.optimizerImpl, o.optimizer) != optim::OptimizerImpl::kFused)
    return "the update path has no found_inf input (fused SGD and AdamW have)";
  if (lossScaling) return "fp16 loss scaling decides on the host";
  return "";
}

}  // namespace

const ChoiceTable<SkipOn>& skipOnChoices() {
  static const ChoiceTable<SkipOn> kTable = {
      "where a step that is not finite is skipped",
      {{"auto", SkipOn::kAuto}, {"host", SkipOn::kHost}, {"device", SkipOn::kDevice}}};
  return kTable;
}

TrainStep::TrainStep(models::Model model, StepOptions o, distributed::Communicator& comm)
    : model_(std::move(model)), o_(o), comm_(comm) {
  if (o_.finetune) {
    recipe_ = finetuneRecipe(model_, o_.finetuneBnAffine, o_.finetuneScope, o_.layerDecay);
    freezeForFinetune(*model_, recipe_);
  }
  if (o_.syncBatchNorm) enableSyncBatchNorm(*model_, comm_);
  std::vector<torch::Tensor> all;
  for (auto& p : model_->parameters()) all.push_back(p);
  for (auto& b : model_->buffers()) {
    all.push_back(b);
    buffers_.push_back(b);
  }
  distributed::GradReducer::broadcastFromRoot(comm_, all);
  params_ = trainableParameters();
  FIXRES_CHECK(std::isfinite(o_.clipGradNorm) && o_.clipGradNorm >= 0, UsageError,
               "--clip-grad-norm must be a finite number >= 0 (0: none), got ", o_.clipGradNorm);
  optim::OptimizerOptions oo;
  oo.kind = o_.optimizer;
  oo.learningRate = o_.learningRate;
  oo.momentum = o_.momentum;
  oo.weightDecay = o_.weightDecay;
  oo.nesterov = o_.nesterov;
  oo.normWeightDecay = o_.normWeightDecay;
  oo.biasWeightDecay = o_.biasWeightDecay;
  oo.params = o_.optimizerParams;
  if (!recipe_.lrScale.empty()) {
    auto scales = std::make_shared<std::map<const void*, double>>();
    for (size_t k = 0; k < recipe_.trainable.size() && k < recipe_.lrScale.size(); ++k)
      (*scales)[recipe_.trainable[k].unsafeGetTensorImpl()] = recipe_.lrScale[k];
    oo.lrScale = [scales](const torch::Tensor& p) {
      auto it = scales->find(p.unsafeGetTensorImpl());
      return it == scales->end() ? 1.0 : it->second;
    };
  }
  optimizer_ = optim::makeOptimizer(*model_, oo);
  // A path this optimizer lacks here is a usage error now, not at the first step.
  optim::checkOptimizerImpl(o_.optimizerImpl, o_.optimizer);
  groupScales_ = optim::groupLearningRateScales(*model_, oo);
  if (o_.lossScaling) scaler_.emplace(*o_.lossScaling);
  reducer_ = std::make_unique<distributed::GradReducer>(comm_, params_, o_.reducer);
  const torch::Device device = params_.empty() ? torch::Device(torch::kCPU) : params_[0].device();
  const std::string hostWhy = whyHostSkip(o_, scaler_.has_value());
  FIXRES_CHECK(o_.skipOn != SkipOn::kDevice || hostWhy.empty(), UsageError,
               "--skip-on device: ", hostWhy);
  deviceSkip_ = o_.skipOn == SkipOn::kDevice ||
                (o_.skipOn == SkipOn::kAuto && hostWhy.empty() && device.is_cuda());
  if (o_.skipOn == SkipOn::kAuto && device.is_cuda() && !deviceSkip_)
    log::info("each step reads its not-finite check back from the GPU: ", hostWhy);
  tally_ = std::make_unique<StepTally>(device, o_.maxSkippedInARow);
  GraphConditions gc;
  gc.cuda = device.is_cuda();
  gc.buildHasGraphs = buildHasCudaGraphs();
  gc.worldSize = comm_.worldSize();
  gc.accumulationSteps = o_.accumulationSteps;
  gc.syncBatchNorm = o_.syncBatchNorm;
  gc.lossScaling = scaler_.has_value();
  gc.deviceSkip = deviceSkip_;
  gc.optimizer = o_.optimizer;
  gc.impl = optim::resolveOptimizerImpl(o_.optimizerImpl, o_.optimizer);
  if (planStepGraph(o_.cudaGraph, gc, &whyNotCaptured_)) {
    graphLr_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
    graphs_ = std::make_unique<StepGraphs>(*this);
  } else if (gc.cuda && o_.cudaGraph == GraphMode::kAuto) {
    log::info("the training step runs eagerly, not as a CUDA graph: ", whyNotCaptured_);
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    auto same = [&](const BufferGroup& g) {
      const auto& first = buffers_[g.members.front()];
      return first.scalar_type() == buffers_[i].scalar_type() &&
             first.device() == buffers_[i].device();
    };
    auto it = std::find_if(bufferGroups_.begin(), bufferGroups_.end(), same);
    if (it == bufferGroups_.end()) it = bufferGroups_.insert(bufferGroups_.end(), BufferGroup{});
    it->members.push_back(i);
  }
}

TrainStep::~TrainStep() = default;

StepResult TrainStep::stepAsync(const torch::Tensor& images, const torch::Tensor& labels,
                                double lr) {
  if (graphs_) {
    graphs_->run(images, labels, lr);
    lastResult_ = StepResult::kPending;
    return lastResult_;
  }
  begin();
  backward(images, labels, 1.0);
  return finish(lr);
}

std::vector<torch::Tensor> TrainStep::trainableParameters() const {
  std::vector<torch::Tensor> out;
  for (auto& p : model_->parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

void TrainStep::setTrainingMode() {
  if (!o_.finetune) {
    model_->train();
  } else {
    setFinetuneMode(*model_, recipe_);
  }
}

void TrainStep::begin(int microBatches) {
  FIXRES_CHECK(microBatches >= 1, InternalError, "a step needs at least one micro-batch");
  if (comm_.worldSize() > 1) distributed::GradReducer::broadcastFromRoot(comm_, buffers_);
  // One process: gradients set to none, so that the first backward writes them in place of a zero
  // fill plus an accumulation pass. Several: zeroed views of the reducer's buckets.
  reducer_->zeroGrad();
  microBatches_ = microBatches;
  backwards_ = 0;
  torch::NoGradGuard noGrad;
  for (auto& g : bufferGroups_) {
    std::vector<torch::Tensor> flat;
    for (size_t i : g.members) flat.push_back(buffers_[i].reshape({-1}));
    g.saved = torch::cat(flat);
  }
  phase_ = Phase::kBegun;
}

bool TrainStep::rollBack() {
  if (phase_ == Phase::kApplying) return false;
  if (phase_ == Phase::kBegun) {
    torch::NoGradGuard noGrad;
    for (auto& g : bufferGroups_) {
      int64_t offset = 0;
      for (size_t i : g.members) {
        auto& b = buffers_[i];
        b.copy_(g.saved.narrow(0, offset, b.numel()).view(b.sizes()));
        offset += b.numel();
      }
    }
    phase_ = Phase::kIdle;
  }
  return true;
}

bool TrainStep::stateFinite() {
  std::vector<torch::Tensor> all = buffers_;
  for (auto& p : model_->parameters()) all.push_back(p);
  for (auto& t : optim::optimizerStateTensors(*optimizer_, o_.optimizer)) all.push_back(t);
  return allFinite(all);
}

torch::Tensor TrainStep::loss(const torch::Tensor& logits, const torch::Tensor& targets,
                              double labelSmoothing) {
  return torch::nn::functional::cross_entropy(
      logits, targets,
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(labelSmoothing));
}

torch::Tensor TrainStep::backward(const torch::Tensor& images, const torch::Tensor& labels,
                                  double lossScale) {
  torch::Tensor loss;
  {
    AutocastGuard autocast(images.device(), o_.precision);
    auto logits = model_->forward(images);
    loss = TrainStep::loss(logits, labels, o_.labelSmoothing);
    // Training top-1 against the hard labels (with mixed soft targets: the dominant one).
    torch::NoGradGuard noGrad;
    const auto hard = labels.dim() == 1 ? labels : labels.argmax(1);
    auto hits = (logits.argmax(1) == hard).sum();
    // In place: a captured step (StepGraph.h) adds to the same tensors at each replay.
    if (!top1Correct_.defined()) {
      top1Correct_ = torch::zeros({}, hits.options());
      top1Seen_ = torch::zeros({}, hits.options());
    }
    top1Correct_.add_(hits);
    top1Seen_.add_(labels.size(0));
  }
  const bool last = ++backwards_ >= microBatches_;
  {
    // Kept on the device: the step's weighted loss and whether a micro-batch's is not finite.
    torch::NoGradGuard noGrad;
    const auto value = loss.detach().to(torch::kDouble);
    const auto weighted = value * lossScale;
    stepLoss_ = stepLoss_.defined() ? stepLoss_ + weighted : weighted;
    const auto bad = torch::isfinite(value).logical_not();
    lossNotFinite_ = lossNotFinite_.defined() ? lossNotFinite_.logical_or(bad) : bad;
  }
  reducer_->expectBackward(last, last ? lossNotFinite_ : torch::Tensor());
  const double scale = scaler_ ? lossScale * scaler_->scale() : lossScale;
  (scale == 1.0 ? loss : loss * scale).backward();
  return loss.detach();
}

StepResult TrainStep::finish(double lr, bool lossFinite) {
  lastResult_ = finishStep(lr, lossFinite);
  return lastResult_;
}

StepResult TrainStep::finishStep(double lr, bool lossFinite) {
  torch::NoGradGuard noGrad;
  // A rank whose loss was not finite said so in backward(): every rank drops the step.
  const auto ranksFlagged = reducer_->reduceOnDevice();
  std::vector<torch::Tensor> grads;
  for (const auto& p : params_) grads.push_back(p.grad());
  // With loss scaling, scaled gradients that are not finite are an overflow, not a failure.
  const auto kind =
      nonFiniteKind(ranksFlagged, scaler_ ? std::vector<torch::Tensor>{} : grads, lossFinite);
  const auto loss = stepLoss_.defined() ? stepLoss_ : torch::zeros({}, torch::kDouble);
  stepLoss_ = torch::Tensor();
  lossNotFinite_ = torch::Tensor();
  // A graph's warm-up (StepGraph.h) runs the step without counting it and skips it.
  const auto skip =
      warmingUp_ ? torch::ones({}, torch::TensorOptions().dtype(torch::kBool).device(loss.device()))
                 : tally_->record(loss, kind, deviceSkip_);
  if (!deviceSkip_) return finishOnHost(skip, grads, lr);
  restoreBuffersWhere(skip);
  if (o_.clipGradNorm > 0) clipOnDevice(grads);
  optim::setLearningRate(*optimizer_, lr, groupScales_);
  phase_ = Phase::kApplying;
  // Captured, the learning rate is read from graphLr_ (filled before each replay).
  optim::optimizerStep(
      *optimizer_, o_.optimizer, o_.optimizerImpl,
      optim::DeviceSkip{skip.to(torch::kFloat), tally_->deviceSkips(), graphLr_, groupScales_});
  phase_ = Phase::kIdle;
  return StepResult::kPending;
}

StepResult TrainStep::finishOnHost(const torch::Tensor& skip,
                                   const std::vector<torch::Tensor>& grads, double lr) {
  if (skip.item<bool>()) {
    rollBack();
    return StepResult::kNotFinite;
  }
  if (scaler_) {
    const bool finite = scaler_->unscale(grads);
    scaler_->update(!finite);
    if (!finite) {
      rollBack();
      tally_->noteOverflow();
      return StepResult::kOverflow;
    }
  }
  if (o_.clipGradNorm > 0)
    lastGradNorm_ = torch::full({}, torch::nn::utils::clip_grad_norm_(params_, o_.clipGradNorm),
                                torch::kDouble);
  optim::setLearningRate(*optimizer_, lr, groupScales_);
  phase_ = Phase::kApplying;
  optim::optimizerStep(*optimizer_, o_.optimizer, o_.optimizerImpl);
  phase_ = Phase::kIdle;
  return StepResult::kApplied;
}

torch::Tensor TrainStep::nonFiniteKind(const torch::Tensor& ranksFlagged,
                                       const std::vector<torch::Tensor>& grads,
                                       bool lossFinite) const {
  const auto loss = stepLoss_.defined() ? stepLoss_ : torch::zeros({}, torch::kDouble);
  auto value = [&](NonFinite k) { return torch::full({}, static_cast<double>(k), loss.options()); };
  const auto zero = value(NonFinite::kNone);
  auto others = (ranksFlagged > 0).to(loss.device());
  if (!grads.empty()) others = others.logical_or(anyNotFinite(grads).to(loss.device()));
  if (!lossFinite) others = torch::ones_like(others);
  return torch::where(torch::isnan(loss), value(NonFinite::kNanLoss),
                      torch::where(torch::isinf(loss), value(NonFinite::kInfLoss),
                                   torch::where(others, value(NonFinite::kGradient), zero)));
}

void TrainStep::restoreBuffersWhere(const torch::Tensor& skip) {
  for (auto& g : bufferGroups_) {
    std::vector<torch::Tensor> flat;
    for (size_t i : g.members) flat.push_back(buffers_[i].reshape({-1}));
    const auto kept = torch::where(skip, g.saved, torch::cat(flat));
    int64_t offset = 0;
    for (size_t i : g.members) {
      auto& b = buffers_[i];
      b.copy_(kept.narrow(0, offset, b.numel()).view(b.sizes()));
      offset += b.numel();
    }
  }
}

// torch.nn.utils.clip_grad_norm_'s arithmetic with the norm left on the device: the gradients
// are multiplied by min(1, max / (norm + 1e-6)).
void TrainStep::clipOnDevice(const std::vector<torch::Tensor>& grads) {
#if TORCH_VERSION_MAJOR >= 2
  std::vector<torch::Tensor> defined;
  for (const auto& g : grads)
    if (g.defined()) defined.push_back(g);
  if (defined.empty()) return;
  lastGradNorm_ = torch::linalg_vector_norm(torch::stack(at::_foreach_norm(defined, 2)), 2);
  at::_foreach_mul_(defined, (o_.clipGradNorm / (lastGradNorm_ + 1e-6)).clamp_max(1.0));
#else
  (void)grads;
  FIXRES_CHECK(false, InternalError, "device-side clipping needs LibTorch 2.x");
#endif
}

double TrainStep::lastGradNorm() const {
  return lastGradNorm_.defined() ? lastGradNorm_.item<double>() : NAN;
}

StepWindow TrainStep::takeWindow() {
  StepWindow w = tally_->take();
  optim::rewindStepCounts(*optimizer_, o_.optimizer, w.deviceSkips);
  return w;
}

TrainStep::Top1Hits TrainStep::takeTop1Hits() {
  Top1Hits h;
  if (!top1Correct_.defined()) return h;
  const auto both = torch::stack({top1Correct_, top1Seen_}).cpu();
  h.correct = both[0].item<int64_t>();
  h.count = both[1].item<int64_t>();
  top1Correct_.zero_();
  top1Seen_.zero_();
  return h;
}

double TrainStep::step(const torch::Tensor& images, const torch::Tensor& labels, double lr) {
  begin();
  const auto loss = backward(images, labels, 1.0);
  finish(lr);
  return loss.item<double>();
}

}  // namespace fixres::engine
