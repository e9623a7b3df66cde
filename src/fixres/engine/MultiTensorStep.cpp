// torch.optim's multi-tensor updates (torch/optim/sgd.py, adamw.py, rmsprop.py: the foreach and
// fused paths), written from their documented arithmetic over LibTorch's state objects.
#include "fixres/engine/MultiTensorStep.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "fixres/common/Error.h"

#if TORCH_VERSION_MAJOR >= 2
#define FIXRES_FUSED_OPTIMIZERS 1
#endif

namespace fixres::engine {
namespace {

using torch::Tensor;
using torch::optim::OptimizerParamGroup;

// The parameters of a group that have a gradient, with their gradients.
struct GroupTensors {
  std::vector<Tensor> params, grads;
};

GroupTensors withGrads(OptimizerParamGroup& group) {
  GroupTensors t;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    t.params.push_back(p);
    t.grads.push_back(p.grad());
  }
  return t;
}

// The gradients with weight decay added (new tensors: p.grad stays as it is), as torch.optim's
// _foreach_add(grads, params, alpha=weight_decay).
std::vector<Tensor> decayed(const GroupTensors& t, double weightDecay) {
  if (weightDecay == 0) return t.grads;
  return at::_foreach_add(t.grads, t.params, weightDecay);
}

template <typename State>
State& stateOf(torch::optim::Optimizer& opt, const Tensor& p) {
  if (auto* s = parameterState(opt, p)) return static_cast<State&>(*s);
  return static_cast<State&>(setParameterState(opt, p, std::make_unique<State>()));
}

// AdamW's state of p for this step: zero moments on the first, the step count advanced.
torch::optim::AdamWParamState& adamwStepState(torch::optim::Optimizer& opt, const Tensor& p) {
  auto& s = stateOf<torch::optim::AdamWParamState>(opt, p);
  if (!s.exp_avg().defined()) {
    s.step(0);
    s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
  }
  s.step(s.step() + 1);
  return s;
}

void sgdForeach(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> grads = decayed(t, o.weight_decay());
  if (o.momentum() != 0) {
    std::vector<Tensor> bufs, old;
    std::vector<Tensor> oldGrads;
    for (size_t k = 0; k < t.params.size(); ++k) {
      auto& s = stateOf<torch::optim::SGDParamState>(opt, t.params[k]);
      if (!s.momentum_buffer().defined()) {
        s.momentum_buffer(grads[k].clone().detach());  // the first step: the buffer is the grad
      } else {
        old.push_back(s.momentum_buffer());
        oldGrads.push_back(grads[k]);
      }
      bufs.push_back(s.momentum_buffer());
    }
    if (!old.empty()) {
      at::_foreach_mul_(old, o.momentum());
      at::_foreach_add_(old, oldGrads, 1 - o.dampening());
    }
    if (o.nesterov()) {
      grads = at::_foreach_add(grads, bufs, o.momentum());
    } else {
      grads = bufs;
    }
  }
  at::_foreach_add_(t.params, grads, -o.lr());
}

void adamwForeach(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
  FIXRES_CHECK(!o.amsgrad(), InternalError, "amsgrad is not one of fixres's optimizers");
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  std::vector<Tensor> avgs, sqs;
  std::vector<at::Scalar> stepSizes, bc2Sqrt;
  for (const auto& p : t.params) {
    auto& s = adamwStepState(opt, p);
    avgs.push_back(s.exp_avg());
    sqs.push_back(s.exp_avg_sq());
    const double bc1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
    const double bc2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
    stepSizes.emplace_back(-(o.lr() / bc1));
    bc2Sqrt.emplace_back(std::sqrt(bc2));
  }
  at::_foreach_mul_(t.params, 1 - o.lr() * o.weight_decay());
#if TORCH_VERSION_MAJOR >= 2
  at::_foreach_lerp_(avgs, t.grads, 1 - beta1);  // torch 2.x's foreach path interpolates
#else
  at::_foreach_mul_(avgs, beta1);  // torch 1.13's multiplies and adds
  at::_foreach_add_(avgs, t.grads, 1 - beta1);
#endif
  at::_foreach_mul_(sqs, beta2);
  at::_foreach_addcmul_(sqs, t.grads, t.grads, 1 - beta2);
  std::vector<Tensor> denom = at::_foreach_sqrt(sqs);
  at::_foreach_div_(denom, bc2Sqrt);
  at::_foreach_add_(denom, o.eps());
  at::_foreach_addcdiv_(t.params, avgs, denom, stepSizes);
}

#if TORCH_VERSION_MAJOR >= 2
// AdamW one parameter at a time with torch 2.x's single-tensor arithmetic (adam.py,
// foreach=False): the first moment interpolates (lerp_), where LibTorch's C++ AdamW::step still
// multiplies and adds as torch 1.13 did. The two round differently, and AdamW's normalised update
// magnifies that rounding in small gradients (2.3e-4 relative after 20 steps on one CPU).
void adamwLoop(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
  FIXRES_CHECK(!o.amsgrad(), InternalError, "amsgrad is not one of fixres's optimizers");
  torch::NoGradGuard noGrad;
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    const Tensor grad = p.grad();
    auto& s = adamwStepState(opt, p);
    p.mul_(1 - o.lr() * o.weight_decay());
    s.exp_avg().lerp_(grad, 1 - beta1);
    s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    const double bc1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
    const double bc2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
    const Tensor denom = (s.exp_avg_sq().sqrt() / std::sqrt(bc2)).add_(o.eps());
    p.addcdiv_(s.exp_avg(), denom, -(o.lr() / bc1));
  }
}
#endif

void rmspropForeach(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const torch::optim::RMSpropOptions&>(group.options());
  FIXRES_CHECK(!o.centered(), InternalError, "centered RMSprop is not one of fixres's optimizers");
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> grads = decayed(t, o.weight_decay());
  std::vector<Tensor> sqs, bufs;
  for (const auto& p : t.params) {
    auto& s = stateOf<torch::optim::RMSpropParamState>(opt, p);
    if (!s.square_avg().defined()) {
      s.step(0);
      s.square_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
      if (o.momentum() > 0) s.momentum_buffer(torch::zeros_like(p, at::MemoryFormat::Preserve));
    }
    s.step(s.step() + 1);
    sqs.push_back(s.square_avg());
    if (o.momentum() > 0) bufs.push_back(s.momentum_buffer());
  }
  at::_foreach_mul_(sqs, o.alpha());
  at::_foreach_addcmul_(sqs, grads, grads, 1 - o.alpha());
  std::vector<Tensor> avg = at::_foreach_sqrt(sqs);
  at::_foreach_add_(avg, o.eps());
  if (o.momentum() > 0) {
    at::_foreach_mul_(bufs, o.momentum());
    at::_foreach_addcdiv_(bufs, grads, avg);
    at::_foreach_add_(t.params, bufs, -o.lr());
  } else {
    at::_foreach_addcdiv_(t.params, grads, avg, -o.lr());
  }
}

#ifdef FIXRES_FUSED_OPTIMIZERS
void sgdFused(torch::optim::Optimizer& opt, OptimizerParamGroup& group, const DeviceSkip* skip,
              double scale) {
  const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> bufs;
  bool first = false;
  if (o.momentum() != 0) {
    for (const auto& p : t.params) {
      auto& s = stateOf<torch::optim::SGDParamState>(opt, p);
      if (!s.momentum_buffer().defined()) {
        // A step that may be skipped on the device starts from zeros (momentum x 0 + gradient is
        // the gradient); else the kernel's first step writes the gradient into the buffer.
        s.momentum_buffer(skip ? torch::zeros_like(p, at::MemoryFormat::Preserve)
                               : torch::empty_like(p, at::MemoryFormat::Preserve));
        first = !skip;
      }
      bufs.push_back(s.momentum_buffer());
    }
  }
  const auto found = skip ? c10::optional<Tensor>(skip->found) : c10::nullopt;
  if (skip && skip->lr.defined()) {
    at::_fused_sgd_(t.params, t.grads, bufs, o.weight_decay(), o.momentum(), skip->lr * scale,
                    o.dampening(), o.nesterov(), /*maximize=*/false, first,
                    /*grad_scale=*/c10::nullopt, found);
    return;
  }
  at::_fused_sgd_(t.params, t.grads, bufs, o.weight_decay(), o.momentum(), o.lr(), o.dampening(),
                  o.nesterov(), /*maximize=*/false, first, /*grad_scale=*/c10::nullopt, found);
}

void adamwFused(torch::optim::Optimizer& opt, OptimizerParamGroup& group, const DeviceSkip* skip) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> avgs, sqs, steps;
  for (const auto& p : t.params) {
    auto& s = adamwStepState(opt, p);
    avgs.push_back(s.exp_avg());
    sqs.push_back(s.exp_avg_sq());
    // The kernel reads the step count as a float32 tensor on the parameter's device.
    auto step = torch::full({}, static_cast<double>(s.step()),
                            torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
    steps.push_back(skip ? step - skip->pending : step);
  }
  at::_fused_adamw_(t.params, t.grads, avgs, sqs, {}, steps, o.lr(), std::get<0>(o.betas()),
                    std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false,
                    /*maximize=*/false, /*grad_scale=*/c10::nullopt,
                    skip ? c10::optional<Tensor>(skip->found) : c10::nullopt);
}
#endif

}  // namespace

const ChoiceTable<OptimizerImpl>& optimizerImpls() {
  static const ChoiceTable<OptimizerImpl> kTable = {"optimizer implementation",
                                                    {{"auto", OptimizerImpl::kAuto},
                                                     {"loop", OptimizerImpl::kLoop},
                                                     {"foreach", OptimizerImpl::kForeach},
                                                     {"fused", OptimizerImpl::kFused}}};
  return kTable;
}

bool hasFusedKernel(OptimizerKind kind) {
#ifdef FIXRES_FUSED_OPTIMIZERS
  return kind != OptimizerKind::kRmsprop;
#else
  (void)kind;
  return false;
#endif
}

OptimizerImpl resolveOptimizerImpl(OptimizerImpl impl, OptimizerKind kind) {
  if (impl != OptimizerImpl::kAuto) return impl;
  return hasFusedKernel(kind) ? OptimizerImpl::kFused : OptimizerImpl::kForeach;
}

namespace {

void stepGroups(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                const DeviceSkip* skip) {
  (void)skip;  // fused kernels only
  impl = resolveOptimizerImpl(impl, kind);
  if (impl == OptimizerImpl::kLoop) {
#if TORCH_VERSION_MAJOR >= 2
    if (kind == OptimizerKind::kAdamw) {
      for (auto& group : optimizer.param_groups()) adamwLoop(optimizer, group);
      return;
    }
#endif
    optimizer.step();
    return;
  }
  FIXRES_CHECK(impl != OptimizerImpl::kFused || hasFusedKernel(kind), UsageError,
               "this build has no fused kernel for ", choiceName(optimizerKinds(), kind),
               " (LibTorch 2.x has SGD's and AdamW's)");
  size_t k = 0;
  for (auto& group : optimizer.param_groups()) {
    const double scale = skip && k < skip->scales.size() ? skip->scales[k] : 1.0;
    ++k;
    (void)scale;
#ifdef FIXRES_FUSED_OPTIMIZERS
    if (impl == OptimizerImpl::kFused) {
      FIXRES_CHECK(!skip || !skip->lr.defined() || kind == OptimizerKind::kSgd, InternalError,
                   "a learning-rate tensor needs SGD's fused kernel");
      if (kind == OptimizerKind::kSgd) sgdFused(optimizer, group, skip, scale);
      if (kind == OptimizerKind::kAdamw) adamwFused(optimizer, group, skip);
      continue;
    }
#endif
    switch (kind) {
      case OptimizerKind::kSgd:
        sgdForeach(optimizer, group);
        break;
      case OptimizerKind::kAdamw:
        adamwForeach(optimizer, group);
        break;
      case OptimizerKind::kRmsprop:
        rmspropForeach(optimizer, group);
        break;
    }
  }
}

}  // namespace

void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl) {
  stepGroups(optimizer, kind, impl, nullptr);
}

void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                   const DeviceSkip& skip) {
  FIXRES_CHECK(resolveOptimizerImpl(impl, kind) == OptimizerImpl::kFused, UsageError,
               "a step skipped on the device needs a fused optimizer kernel");
  stepGroups(optimizer, kind, impl, &skip);
}

void rewindStepCounts(torch::optim::Optimizer& optimizer, OptimizerKind kind, int64_t skipped) {
  if (skipped == 0 || kind == OptimizerKind::kSgd) return;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) {
      auto* s = parameterState(optimizer, p);
      if (!s) continue;
      if (kind == OptimizerKind::kAdamw) {
        auto& a = static_cast<torch::optim::AdamWParamState&>(*s);
        a.step(std::max<int64_t>(0, a.step() - skipped));
      } else {
        auto& r = static_cast<torch::optim::RMSpropParamState&>(*s);
        r.step(std::max<int64_t>(0, r.step() - skipped));
      }
    }
}

}  // namespace fixres::engine
