// LARS (You et al. 2017, "Large batch training of convolutional networks"; MLPerf ResNet-50's
// large-batch optimizer) as timm.optim.Lars computes it (trust_coeff --lars-trust-coeff, 0.001 by
// default, eps 1e-8, no dampening, no trust clipping): each parameter's gradient, weight decay
// added, is scaled by the trust ratio coeff |w| / (|g| + wd |w| + eps) (1 where |w| or |g| is 0),
// then SGD's momentum
// (Nesterov optional) and step. A parameter whose group has no weight decay is not adapted: norm
// layers and biases take no decay here unless --norm-weight-decay / --bias-weight-decay are given,
// so BatchNorm and biases are excluded, as MLPerf's. Checked against timm over 20 steps
// (tests/unit/optim/LarsLambTest.cpp).
#include "fixres/optim/MultiTensorStep.h"

namespace fixres::optim {
namespace lars {

// timm.optim.Lars's trust_coeff.
constexpr Setting kTrustCoeffRow{"lars_trust_coeff",
                                 "--lars-trust-coeff",
                                 "Optimisation",
                                 "With --opt lars: the trust coefficient (timm's trust_coeff): a "
                                 "parameter's step is this times |w| / |g + wd w| of the rate",
                                 Range::reals(0, 1, /*loOpen=*/true),
                                 SettingRole::kCompared,
                                 "train,finetune"};
constexpr double kEps = 1e-8;

void step(torch::optim::Optimizer& opt) {
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const OwnOptions&>(group.options());
    const double trustCoefficient = o.params.at(kTrustCoeffRow.key);
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      if (o.weightDecay != 0) {
        const auto w = p.norm(2.0), g = grad.norm(2.0);
        auto trust = trustCoefficient * w / (g + w * o.weightDecay + kEps);
        const auto one = torch::ones_like(trust);
        trust = torch::where(w > 0, torch::where(g > 0, trust, one), one);
        grad.add_(p, o.weightDecay);
        grad.mul_(trust);
      }
      if (o.momentum != 0) {
        auto& s = stateOf<torch::optim::SGDParamState>(opt, p);
        if (!s.momentum_buffer().defined()) {
          s.momentum_buffer(grad.clone().detach());
        } else {
          s.momentum_buffer().mul_(o.momentum).add_(grad);
        }
        grad = o.nesterov ? grad.add(s.momentum_buffer(), o.momentum) : s.momentum_buffer();
      }
      p.add_(grad, -o.lr);
    }
  }
}

}  // namespace lars

const OptimizerDescriptor& larsOptimizer() {
  static const OptimizerDescriptor kLars = [] {
    OptimizerDescriptor d;
    d.name = "lars";
    d.help =
        "lars (timm.optim.Lars: SGD with a layer-wise trust ratio, --lars-trust-coeff; "
        "--momentum, --nesterov; norm layers and biases take no decay and no trust ratio unless "
        "--norm-weight-decay / --bias-weight-decay are given)";
    d.readsMomentum = d.nesterov = d.excludeNormAndBias = true;
    d.make = [](std::vector<torch::optim::OptimizerParamGroup> groups, const OptimizerOptions& o) {
      return makeOwnOptimizer(std::move(groups), o, lars::step);
    };
    d.groupOptions = ownGroupOptions;
    d.saveState = [](torch::optim::OptimizerParamState& s, const StatePut& put) {
      saveMomentum(s, put, "momentum_buffer/");
    };
    d.loadState = [](const StateGet& in) { return loadMomentum(in, "momentum_buffer/"); };
    d.params = {{lars::kTrustCoeffRow, 0.001}};
    return d;
  }();
  return kLars;
}

}  // namespace fixres::optim
