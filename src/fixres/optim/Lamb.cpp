// LAMB (You et al. 2019, "Large batch optimization for deep learning: training BERT in 76
// minutes"; NVIDIA's FusedLAMB variant) as timm.optim.Lamb computes it: betas --lamb-beta1 and
// --lamb-beta2 (timm's defaults 0.9, 0.999), eps 1e-6, bias correction, gradient averaging, the
// gradients first divided by max(1, global norm / 1.0); Adam's update, weight decay added to it,
// scaled by the trust ratio |w| / |update| (1 where either is 0) in groups with weight decay. Norm
// layers' parameters and biases take no weight decay (and so no trust ratio) unless
// --norm-weight-decay /
// --bias-weight-decay are given. Checked against timm over 20 steps
// (tests/unit/optim/LarsLambTest.cpp).
#include <cmath>

#include "fixres/optim/MultiTensorStep.h"

namespace fixres::optim {
namespace lamb {

// timm.optim.Lamb's betas.
constexpr Setting kBeta1Row{"lamb_beta1",
                            "--lamb-beta1",
                            "Optimisation",
                            "With --opt lamb: the decay of the gradient's running mean (timm's "
                            "betas[0])",
                            Range::reals(0, 1, false, /*hiOpen=*/true),
                            SettingRole::kCompared,
                            "train,finetune"};
constexpr Setting kBeta2Row{"lamb_beta2",
                            "--lamb-beta2",
                            "Optimisation",
                            "With --opt lamb: the decay of the squared gradient's running mean "
                            "(timm's betas[1])",
                            Range::reals(0, 1, false, /*hiOpen=*/true),
                            SettingRole::kCompared,
                            "train,finetune"};
constexpr double kEps = 1e-6, kMaxGradNorm = 1.0;

void step(torch::optim::Optimizer& opt) {
  std::vector<torch::Tensor> norms;
  for (auto& group : opt.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined()) norms.push_back(at::linalg_vector_norm(p.grad()));
  if (norms.empty()) return;
  const auto clip = (at::linalg_vector_norm(torch::stack(norms)) / kMaxGradNorm).clamp_(1.0);
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const OwnOptions&>(group.options());
    const double beta1 = o.params.at(kBeta1Row.key), beta2 = o.params.at(kBeta2Row.key);
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      grad.div_(clip);
      auto& s = adamStepState(opt, p);
      const double n = static_cast<double>(s.step());
      const double bc1 = 1 - std::pow(beta1, n), bc2 = 1 - std::pow(beta2, n);
      s.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
      s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const auto denom = (s.exp_avg_sq().sqrt() / std::pow(bc2, 0.5)).add_(kEps);
      auto update = (s.exp_avg() / bc1).div_(denom);
      if (o.weightDecay != 0) {
        update.add_(p, o.weightDecay);
        const auto w = p.norm(2.0), u = update.norm(2.0);
        const auto one = torch::ones_like(w);
        update.mul_(torch::where(w > 0, torch::where(u > 0, w / u, one), one));
      }
      p.add_(update, -o.lr);
    }
  }
}

}  // namespace lamb

const OptimizerDescriptor& lambOptimizer() {
  static const OptimizerDescriptor kLamb = [] {
    OptimizerDescriptor d;
    d.name = "lamb";
    d.help =
        "lamb (timm.optim.Lamb: Adam's update with a layer-wise trust ratio, --lamb-beta1/2, "
        "eps 1e-6, the gradients' global norm clipped to 1; norm layers and biases take no decay "
        "and no trust ratio unless --norm-weight-decay / --bias-weight-decay are given)";
    d.excludeNormAndBias = true;
    d.make = [](std::vector<torch::optim::OptimizerParamGroup> groups, const OptimizerOptions& o) {
      return makeOwnOptimizer(std::move(groups), o, lamb::step);
    };
    d.groupOptions = ownGroupOptions;
    d.saveState = saveAdam;
    d.loadState = loadAdam;
    d.rewindStep = rewindAdam;
    d.params = {{lamb::kBeta1Row, 0.9}, {lamb::kBeta2Row, 0.999}};
    return d;
  }();
  return kLamb;
}

}  // namespace fixres::optim
