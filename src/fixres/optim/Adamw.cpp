// AdamW: torch.optim.AdamW(lr, weight_decay) with its default betas (0.9, 0.999) and eps 1e-8.
// The foreach and fused paths are torch.optim's (torch/optim/adamw.py), written from their
// arithmetic; on LibTorch 2.x the loop is fixres's own, with torch 2.x's arithmetic.
#include <cmath>
#include <tuple>

#include "fixres/common/Error.h"
#include "fixres/optim/MultiTensorStep.h"

namespace fixres::optim {
namespace adamw {

using torch::Tensor;
using torch::optim::AdamWOptions;
using torch::optim::OptimizerParamGroup;

std::unique_ptr<torch::optim::OptimizerOptions> groupOptions(const OptimizerOptions& o,
                                                             double weightDecay) {
  return std::make_unique<AdamWOptions>(AdamWOptions(o.learningRate).weight_decay(weightDecay));
}

std::unique_ptr<torch::optim::Optimizer> make(std::vector<OptimizerParamGroup> groups,
                                              const OptimizerOptions& o) {
  return std::make_unique<torch::optim::AdamW>(
      std::move(groups), static_cast<AdamWOptions&>(*groupOptions(o, o.weightDecay)));
}

void foreachStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdamWOptions&>(group.options());
  FIXRES_CHECK(!o.amsgrad(), InternalError, "amsgrad is not one of fixres's optimizers");
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  std::vector<Tensor> avgs, sqs;
  std::vector<at::Scalar> stepSizes, bc2Sqrt;
  for (const auto& p : t.params) {
    auto& s = adamStepState(opt, p);
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
// One parameter at a time with torch 2.x's single-tensor arithmetic (adam.py, foreach=False):
// the first moment interpolates (lerp_), where LibTorch's C++ AdamW::step still multiplies and
// adds as torch 1.13 did. The two round differently, and AdamW's normalised update magnifies
// that rounding in small gradients (2.3e-4 relative after 20 steps on one CPU).
void loopStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdamWOptions&>(group.options());
  FIXRES_CHECK(!o.amsgrad(), InternalError, "amsgrad is not one of fixres's optimizers");
  torch::NoGradGuard noGrad;
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    const Tensor grad = p.grad();
    auto& s = adamStepState(opt, p);
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

#ifdef FIXRES_FUSED_OPTIMIZERS
void fusedStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group, const DeviceSkip* skip,
               double) {
  const auto& o = static_cast<const AdamWOptions&>(group.options());
  FIXRES_CHECK(!skip || !skip->lr.defined(), InternalError,
               "a learning-rate tensor needs SGD's fused kernel");
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> avgs, sqs, steps;
  for (const auto& p : t.params) {
    auto& s = adamStepState(opt, p);
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

}  // namespace adamw

const OptimizerDescriptor& adamwOptimizer() {
  static const OptimizerDescriptor kAdamw = [] {
    OptimizerDescriptor d;
    d.name = "adamw";
    d.help = "adamw (torch.optim.AdamW, default betas and eps)";
    d.make = adamw::make;
    d.groupOptions = adamw::groupOptions;
    d.saveState = saveAdam;
    d.loadState = loadAdam;
    d.rewindStep = rewindAdam;
#if TORCH_VERSION_MAJOR >= 2
    d.loopStep = adamw::loopStep;
#endif
    d.foreachStep = adamw::foreachStep;
#ifdef FIXRES_FUSED_OPTIMIZERS
    d.fusedStep = adamw::fusedStep;
#endif
    return d;
  }();
  return kAdamw;
}

}  // namespace fixres::optim
