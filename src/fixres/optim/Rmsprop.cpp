// RMSprop: torch.optim.RMSprop(lr, momentum, weight_decay, eps=0.0316, alpha=0.9), the
// torchvision references' (TensorFlow-like) setting. The loop is LibTorch's; the foreach path is
// torch.optim's (torch/optim/rmsprop.py); there is no fused kernel.
#include "fixres/common/Error.h"
#include "fixres/optim/MultiTensorStep.h"

namespace fixres::optim {
namespace rmsprop {

using torch::Tensor;
using torch::optim::OptimizerParamGroup;
using torch::optim::RMSpropOptions;
using torch::optim::RMSpropParamState;

constexpr double kEps = 0.0316;
constexpr double kAlpha = 0.9;

std::unique_ptr<torch::optim::OptimizerOptions> groupOptions(const OptimizerOptions& o,
                                                             double weightDecay) {
  return std::make_unique<RMSpropOptions>(RMSpropOptions(o.learningRate)
                                              .momentum(o.momentum)
                                              .weight_decay(weightDecay)
                                              .eps(kEps)
                                              .alpha(kAlpha));
}

std::unique_ptr<torch::optim::Optimizer> make(std::vector<OptimizerParamGroup> groups,
                                              const OptimizerOptions& o) {
  return std::make_unique<torch::optim::RMSprop>(
      std::move(groups), static_cast<RMSpropOptions&>(*groupOptions(o, o.weightDecay)));
}

void foreachStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const RMSpropOptions&>(group.options());
  FIXRES_CHECK(!o.centered(), InternalError, "centered RMSprop is not one of fixres's optimizers");
  GroupTensors t = withGrads(group);
  if (t.params.empty()) return;
  torch::NoGradGuard noGrad;
  std::vector<Tensor> grads = decayed(t, o.weight_decay());
  std::vector<Tensor> sqs, bufs;
  for (const auto& p : t.params) {
    auto& s = stateOf<RMSpropParamState>(opt, p);
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

void saveState(torch::optim::OptimizerParamState& s, const StatePut& put) {
  auto& r = static_cast<RMSpropParamState&>(s);
  put("square_avg/", r.square_avg());
  put("momentum_buffer/", r.momentum_buffer());  // (none without momentum)
  put("step/", torch::tensor(r.step(), torch::kLong));
}

std::unique_ptr<torch::optim::OptimizerParamState> loadState(const StateGet& in) {
  auto sq = in.get("square_avg/", true), buf = in.get("momentum_buffer/", true),
       step = in.get("step/", false);
  if (!sq.defined() && !step.defined()) return nullptr;
  if (!sq.defined() || !step.defined()) in.fail("square_avg and step");
  auto s = std::make_unique<RMSpropParamState>();
  s->step(step.item<int64_t>());
  s->square_avg(sq);
  if (buf.defined()) s->momentum_buffer(buf);
  return s;
}

}  // namespace rmsprop

const OptimizerDescriptor& rmspropOptimizer() {
  static const OptimizerDescriptor kRmsprop = [] {
    OptimizerDescriptor d;
    d.name = "rmsprop";
    d.help = "rmsprop (torch.optim.RMSprop with eps 0.0316 and alpha 0.9: --momentum)";
    d.readsMomentum = true;
    d.make = rmsprop::make;
    d.groupOptions = rmsprop::groupOptions;
    d.saveState = rmsprop::saveState;
    d.loadState = rmsprop::loadState;
    d.rewindStep = [](torch::optim::OptimizerParamState& s, int64_t skipped) {
      auto& r = static_cast<torch::optim::RMSpropParamState&>(s);
      r.step(std::max<int64_t>(0, r.step() - skipped));
    };
    d.foreachStep = rmsprop::foreachStep;
    return d;
  }();
  return kRmsprop;
}

}  // namespace fixres::optim
