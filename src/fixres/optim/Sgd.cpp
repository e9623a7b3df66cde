// SGD: torch.optim.SGD(lr, momentum, weight_decay, nesterov). The loop is LibTorch's SGD; the
// foreach and fused paths are torch.optim's (torch/optim/sgd.py), written from their arithmetic.
#include "fixres/optim/MultiTensorStep.h"

namespace fixres::optim {
namespace sgd {

using torch::Tensor;
using torch::optim::OptimizerParamGroup;
using torch::optim::SGDOptions;

std::unique_ptr<torch::optim::OptimizerOptions> groupOptions(const OptimizerOptions& o,
                                                             double weightDecay) {
  return std::make_unique<SGDOptions>(SGDOptions(o.learningRate)
                                          .momentum(o.momentum)
                                          .weight_decay(weightDecay)
                                          .nesterov(o.nesterov));
}

std::unique_ptr<torch::optim::Optimizer> make(std::vector<OptimizerParamGroup> groups,
                                              const OptimizerOptions& o) {
  return std::make_unique<torch::optim::SGD>(
      std::move(groups), static_cast<SGDOptions&>(*groupOptions(o, o.weightDecay)));
}

void foreachStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
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

#ifdef FIXRES_FUSED_OPTIMIZERS
void fusedStep(torch::optim::Optimizer& opt, OptimizerParamGroup& group, const DeviceSkip* skip,
               double scale) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
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
#endif

}  // namespace sgd

const OptimizerDescriptor& sgdOptimizer() {
  static const OptimizerDescriptor kSgd = [] {
    OptimizerDescriptor d;
    d.name = "sgd";
    d.help = "sgd (torch.optim.SGD: --momentum, --nesterov)";
    d.readsMomentum = d.nesterov = true;
    d.make = sgd::make;
    d.groupOptions = sgd::groupOptions;
    // The momentum buffer under the parameter's own name: fixres's checkpoints since 0.1.0.
    d.saveState = [](torch::optim::OptimizerParamState& s, const StatePut& put) {
      saveMomentum(s, put, "");
    };
    d.loadState = [](const StateGet& in) { return loadMomentum(in, ""); };
    d.foreachStep = sgd::foreachStep;
#ifdef FIXRES_FUSED_OPTIMIZERS
    d.fusedStep = sgd::fusedStep;
#endif
    d.capturable = true;  // its fused step (where the build has it) reads the rate on the device
    return d;
  }();
  return kSgd;
}

}  // namespace fixres::optim
