// Optimizers over parameter groups, and their state by parameter name. LibTorch's SGD, AdamW and
// RMSprop compute torch.optim's updates (tests/unit/engine/OptimizerTest.cpp checks 5 steps of
// each against torch.optim).
#include "fixres/engine/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/models/BatchNorm.h"

namespace fixres::engine {
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

bool isNormLayer(const torch::nn::Module& m) {
  using namespace torch::nn;
  return m.as<models::BatchNorm2dImpl>() || m.as<BatchNorm1dImpl>() || m.as<BatchNorm2dImpl>() ||
         m.as<BatchNorm3dImpl>() || m.as<InstanceNorm1dImpl>() || m.as<InstanceNorm2dImpl>() ||
         m.as<InstanceNorm3dImpl>() || m.as<GroupNormImpl>() || m.as<LayerNormImpl>() ||
         m.as<LocalResponseNormImpl>() || m.as<CrossMapLRN2dImpl>();
}

void checkDecay(const char* flag, double v) {
  FIXRES_CHECK(std::isfinite(v) && v >= 0, UsageError, flag, " must be a finite number >= 0, got ",
               v);
}

std::unique_ptr<torch::optim::OptimizerOptions> groupOptions(const OptimizerOptions& o,
                                                             double weightDecay) {
  using namespace torch::optim;
  switch (o.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SGDOptions>(SGDOptions(o.learningRate)
                                              .momentum(o.momentum)
                                              .weight_decay(weightDecay)
                                              .nesterov(o.nesterov));
    case OptimizerKind::kAdamw:
      return std::make_unique<AdamWOptions>(AdamWOptions(o.learningRate).weight_decay(weightDecay));
    case OptimizerKind::kRmsprop:
      return std::make_unique<RMSpropOptions>(RMSpropOptions(o.learningRate)
                                                  .momentum(o.momentum)
                                                  .weight_decay(weightDecay)
                                                  .eps(kRmspropEps)
                                                  .alpha(kRmspropAlpha));
  }
  FIXRES_FAIL(InternalError, "unknown optimizer kind");
}

// name -> parameter, for the state dict.
template <typename F>
void forEachStatefulParameter(const torch::nn::Module& model, torch::optim::Optimizer& opt, F&& f) {
  auto& states = opt.state();
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    auto it = states.find(optimizerStateKey(item.value()));
    if (it != states.end()) f(item.key(), *it->second);
  }
}

at::Tensor stepTensor(int64_t step) {
  return torch::tensor(step, torch::kLong);
}

}  // namespace

const ChoiceTable<OptimizerKind>& optimizerKinds() {
  static const ChoiceTable<OptimizerKind> kTable = {"optimizer",
                                                    {{"sgd", OptimizerKind::kSgd},
                                                     {"adamw", OptimizerKind::kAdamw},
                                                     {"rmsprop", OptimizerKind::kRmsprop}}};
  return kTable;
}

std::vector<ParameterGroup> parameterGroups(const torch::nn::Module& model,
                                            const OptimizerOptions& o) {
  ParameterGroup other{"other", o.weightDecay, 1, {}, {}};
  ParameterGroup norm{"norm", o.normWeightDecay.value_or(0), 1, {}, {}};
  ParameterGroup bias{"bias", o.biasWeightDecay.value_or(0), 1, {}, {}};
  // Pre-order over the modules, each module's own parameters in registration order: the
  // references' recursion over named_children.
  for (const auto& item : model.named_modules()) {
    const bool inNorm = o.normWeightDecay && isNormLayer(*item.value());
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      if (!p.value().requires_grad()) continue;
      ParameterGroup& g = o.biasWeightDecay && p.key() == "bias" ? bias : inNorm ? norm : other;
      g.names.push_back(item.key().empty() ? p.key() : item.key() + "." + p.key());
      g.parameters.push_back(p.value());
    }
  }
  std::vector<ParameterGroup> out;
  for (auto* g : {&other, &norm, &bias}) {
    if (g->parameters.empty()) continue;
    if (!o.lrScale) {
      out.push_back(std::move(*g));
      continue;
    }
    // Split by learning-rate multiplier (layer-wise decay), in the order of first appearance.
    std::vector<ParameterGroup> split;
    for (size_t k = 0; k < g->parameters.size(); ++k) {
      const double scale = o.lrScale(g->parameters[k]);
      auto it = std::find_if(split.begin(), split.end(),
                             [&](const ParameterGroup& s) { return s.lrScale == scale; });
      if (it == split.end())
        it = split.insert(split.end(), ParameterGroup{g->role, g->weightDecay, scale, {}, {}});
      it->names.push_back(g->names[k]);
      it->parameters.push_back(g->parameters[k]);
    }
    for (auto& s : split) out.push_back(std::move(s));
  }
  return out;
}

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const torch::nn::Module& model,
                                                       const OptimizerOptions& o) {
  FIXRES_CHECK(std::isfinite(o.learningRate) && o.learningRate > 0, UsageError,
               "--learning-rate must be a finite number > 0, got ", o.learningRate);
  FIXRES_CHECK(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1, UsageError,
               "--momentum must be a finite number in [0, 1), got ", o.momentum);
  checkDecay("--weight-decay", o.weightDecay);
  if (o.normWeightDecay) checkDecay("--norm-weight-decay", *o.normWeightDecay);
  if (o.biasWeightDecay) checkDecay("--bias-weight-decay", *o.biasWeightDecay);
  FIXRES_CHECK(!o.nesterov || (o.kind == OptimizerKind::kSgd && o.momentum > 0), UsageError,
               "--nesterov needs --opt sgd and --momentum > 0");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (auto& g : parameterGroups(model, o)) {
    groups.emplace_back(g.parameters, groupOptions(o, g.weightDecay));
    groups.back().options().set_lr(o.learningRate * g.lrScale);
  }
  using namespace torch::optim;
  switch (o.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SGD>(std::move(groups),
                                   static_cast<SGDOptions&>(*groupOptions(o, o.weightDecay)));
    case OptimizerKind::kAdamw:
      return std::make_unique<AdamW>(std::move(groups),
                                     static_cast<AdamWOptions&>(*groupOptions(o, o.weightDecay)));
    case OptimizerKind::kRmsprop:
      return std::make_unique<RMSprop>(
          std::move(groups), static_cast<RMSpropOptions&>(*groupOptions(o, o.weightDecay)));
  }
  FIXRES_FAIL(InternalError, "unknown optimizer kind");
}

void setLearningRate(torch::optim::Optimizer& optimizer, double lr,
                     const std::vector<double>& scales) {
  auto& groups = optimizer.param_groups();
  for (size_t k = 0; k < groups.size(); ++k)
    groups[k].options().set_lr(k < scales.size() ? lr * scales[k] : lr);
}

std::vector<double> groupLearningRateScales(const torch::nn::Module& model,
                                            const OptimizerOptions& options) {
  std::vector<double> out;
  for (const auto& g : parameterGroups(model, options)) out.push_back(g.lrScale);
  return out;
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

std::vector<torch::Tensor> optimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                 OptimizerKind kind) {
  using namespace torch::optim;
  std::vector<torch::Tensor> out;
  for (auto& [key, s] : optimizer.state()) {
    switch (kind) {
      case OptimizerKind::kSgd:
        out.push_back(static_cast<SGDParamState&>(*s).momentum_buffer());
        break;
      case OptimizerKind::kAdamw: {
        auto& a = static_cast<AdamWParamState&>(*s);
        out.insert(out.end(), {a.exp_avg(), a.exp_avg_sq()});
        break;
      }
      case OptimizerKind::kRmsprop: {
        auto& r = static_cast<RMSpropParamState&>(*s);
        out.insert(out.end(), {r.square_avg(), r.momentum_buffer()});
        break;
      }
    }
  }
  // (RMSprop without momentum has no momentum buffer.)
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& t) { return !t.defined(); }),
            out.end());
  return out;
}

c10::Dict<std::string, at::Tensor> optimizerState(const torch::nn::Module& model,
                                                  torch::optim::Optimizer& optimizer,
                                                  OptimizerKind kind) {
  using namespace torch::optim;
  c10::Dict<std::string, at::Tensor> out;
  auto put = [&out](const std::string& key, const at::Tensor& t) {
    if (t.defined()) out.insert(key, t.detach().cpu());
  };
  forEachStatefulParameter(model, optimizer, [&](const std::string& name, OptimizerParamState& s) {
    switch (kind) {
      case OptimizerKind::kSgd:
        put(name, static_cast<SGDParamState&>(s).momentum_buffer());
        break;
      case OptimizerKind::kAdamw: {
        auto& a = static_cast<AdamWParamState&>(s);
        put("exp_avg/" + name, a.exp_avg());
        put("exp_avg_sq/" + name, a.exp_avg_sq());
        put("step/" + name, stepTensor(a.step()));
        break;
      }
      case OptimizerKind::kRmsprop: {
        auto& r = static_cast<RMSpropParamState&>(s);
        put("square_avg/" + name, r.square_avg());
        put("momentum_buffer/" + name, r.momentum_buffer());
        put("step/" + name, stepTensor(r.step()));
        break;
      }
    }
  });
  return out;
}

void restoreOptimizerState(const c10::impl::GenericDict& dict, const torch::nn::Module& model,
                           torch::optim::Optimizer& optimizer, OptimizerKind kind,
                           const std::string& path) {
  using namespace torch::optim;
  auto& states = optimizer.state();
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    // The entry `prefix + name` on p's device, or an undefined tensor when absent.
    auto get = [&](const std::string& prefix, bool likeParameter) -> torch::Tensor {
      const std::string key = prefix + item.key();
      if (!dict.contains(key)) return {};
      const c10::IValue v = dict.at(key);
      FIXRES_CHECK(v.isTensor(), WeightsError, path, ": optimizer entry ", key, " is not a tensor");
      torch::Tensor t = v.toTensor();
      if (!likeParameter) {
        FIXRES_CHECK(t.numel() == 1, WeightsError, path, ": optimizer entry ", key,
                     " is not a scalar");
        return t;
      }
      FIXRES_CHECK(t.sizes() == p.sizes(), WeightsError, path, ": optimizer entry ", key,
                   " has shape ", t.sizes(), ", expected ", p.sizes());
      return t.to(p.device(), p.scalar_type()).clone();
    };
    std::unique_ptr<OptimizerParamState> state;
    switch (kind) {
      case OptimizerKind::kSgd: {
        auto buf = get("", true);
        if (!buf.defined()) continue;
        auto s = std::make_unique<SGDParamState>();
        s->momentum_buffer(buf);
        state = std::move(s);
        break;
      }
      case OptimizerKind::kAdamw: {
        auto m = get("exp_avg/", true), v = get("exp_avg_sq/", true), step = get("step/", false);
        if (!m.defined() && !v.defined() && !step.defined()) continue;
        FIXRES_CHECK(m.defined() && v.defined() && step.defined(), WeightsError, path,
                     ": incomplete AdamW state of ", item.key());
        auto s = std::make_unique<AdamWParamState>();
        s->step(step.item<int64_t>());
        s->exp_avg(m);
        s->exp_avg_sq(v);
        state = std::move(s);
        break;
      }
      case OptimizerKind::kRmsprop: {
        auto sq = get("square_avg/", true), buf = get("momentum_buffer/", true),
             step = get("step/", false);
        if (!sq.defined() && !step.defined()) continue;
        FIXRES_CHECK(sq.defined() && step.defined(), WeightsError, path,
                     ": incomplete RMSprop state of ", item.key());
        auto s = std::make_unique<RMSpropParamState>();
        s->step(step.item<int64_t>());
        s->square_avg(sq);
        if (buf.defined()) s->momentum_buffer(buf);
        state = std::move(s);
        break;
      }
    }
    states[optimizerStateKey(p)] = std::move(state);
  }
}

}  // namespace fixres::engine
