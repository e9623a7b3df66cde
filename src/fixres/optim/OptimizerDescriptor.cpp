// What the optimizers' files share: LibTorch's state map, the optimizer LARS and LAMB run in,
// and the two state layouts.
#include "fixres/optim/OptimizerDescriptor.h"

#include <algorithm>
#include <sstream>
#include <type_traits>
#include <utility>

#include "fixres/optim/Optimizer.h"

namespace fixres::optim {
namespace {

// The key LibTorch's optimizers file a parameter's state under: the TensorImpl's address, as
// text in LibTorch 1.x (c10::guts::to_string), the pointer itself from 2.0 on.
using StateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
template <typename Key>
Key stateKeyOf(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << impl;
    return os.str();
  } else {
    return impl;
  }
}
StateKey optimizerStateKey(const torch::Tensor& p) {
  return stateKeyOf<StateKey>(p.unsafeGetTensorImpl());
}

class OwnOptimizer : public torch::optim::Optimizer {
 public:
  OwnOptimizer(std::vector<torch::optim::OptimizerParamGroup> groups,
               std::unique_ptr<torch::optim::OptimizerOptions> defaults,
               void (*step)(torch::optim::Optimizer&))
      : Optimizer(std::move(groups), std::move(defaults)), step_(step) {}
  torch::Tensor step(LossClosure closure) override {
    torch::Tensor loss;
    if (closure) {
      torch::AutoGradMode grad(true);
      loss = closure();
    }
    torch::NoGradGuard noGrad;
    step_(*this);
    return loss;
  }

 private:
  void (*step_)(torch::optim::Optimizer&);
};

}  // namespace

GroupTensors withGrads(torch::optim::OptimizerParamGroup& group) {
  GroupTensors t;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    t.params.push_back(p);
    t.grads.push_back(p.grad());
  }
  return t;
}

std::vector<torch::Tensor> decayed(const GroupTensors& t, double weightDecay) {
  if (weightDecay == 0) return t.grads;
  return at::_foreach_add(t.grads, t.params, weightDecay);
}

torch::optim::OptimizerParamState* parameterState(torch::optim::Optimizer& optimizer,
                                                  const torch::Tensor& p) {
  auto it = optimizer.state().find(optimizerStateKey(p));
  return it == optimizer.state().end() ? nullptr : it->second.get();
}

torch::optim::OptimizerParamState& setParameterState(
    torch::optim::Optimizer& optimizer, const torch::Tensor& p,
    std::unique_ptr<torch::optim::OptimizerParamState> state) {
  auto& slot = optimizer.state()[optimizerStateKey(p)];
  slot = std::move(state);
  return *slot;
}

std::unique_ptr<torch::optim::OptimizerOptions> ownGroupOptions(const OptimizerOptions& o,
                                                                double weightDecay) {
  auto out = std::make_unique<OwnOptions>();
  out->lr = o.learningRate;
  out->momentum = o.kind->readsMomentum ? o.momentum : 0;
  out->weightDecay = weightDecay;
  out->nesterov = o.nesterov;
  for (const OptimizerParam& p : o.kind->params) {
    const auto given = o.params.find(p.row.key);
    out->params[p.row.key] = given == o.params.end() ? p.value : given->second;
  }
  return out;
}

std::unique_ptr<torch::optim::Optimizer> makeOwnOptimizer(
    std::vector<torch::optim::OptimizerParamGroup> groups, const OptimizerOptions& o,
    void (*step)(torch::optim::Optimizer& opt)) {
  return std::make_unique<OwnOptimizer>(std::move(groups), ownGroupOptions(o, o.weightDecay), step);
}

void saveMomentum(torch::optim::OptimizerParamState& s, const StatePut& put, const char* key) {
  put(key, static_cast<torch::optim::SGDParamState&>(s).momentum_buffer());
}

std::unique_ptr<torch::optim::OptimizerParamState> loadMomentum(const StateGet& in,
                                                                const char* key) {
  auto buf = in.get(key, true);
  if (!buf.defined()) return nullptr;
  auto s = std::make_unique<torch::optim::SGDParamState>();
  s->momentum_buffer(buf);
  return s;
}

void saveAdam(torch::optim::OptimizerParamState& s, const StatePut& put) {
  auto& a = static_cast<torch::optim::AdamWParamState&>(s);
  put("exp_avg/", a.exp_avg());
  put("exp_avg_sq/", a.exp_avg_sq());
  put("step/", torch::tensor(a.step(), torch::kLong));
}

std::unique_ptr<torch::optim::OptimizerParamState> loadAdam(const StateGet& in) {
  auto m = in.get("exp_avg/", true), v = in.get("exp_avg_sq/", true), step = in.get("step/", false);
  if (!m.defined() && !v.defined() && !step.defined()) return nullptr;
  if (!m.defined() || !v.defined() || !step.defined()) in.fail("exp_avg, exp_avg_sq and step");
  auto s = std::make_unique<torch::optim::AdamWParamState>();
  s->step(step.item<int64_t>());
  s->exp_avg(m);
  s->exp_avg_sq(v);
  return s;
}

void rewindAdam(torch::optim::OptimizerParamState& s, int64_t skipped) {
  auto& a = static_cast<torch::optim::AdamWParamState&>(s);
  a.step(std::max<int64_t>(0, a.step() - skipped));
}

torch::optim::AdamWParamState& adamStepState(torch::optim::Optimizer& opt, const torch::Tensor& p) {
  auto& s = stateOf<torch::optim::AdamWParamState>(opt, p);
  if (!s.exp_avg().defined()) {
    s.step(0);
    s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
  }
  s.step(s.step() + 1);
  return s;
}

}  // namespace fixres::optim
