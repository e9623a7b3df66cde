// Optimizers over parameter groups, and their state by parameter name, through each optimizer's
// descriptor. tests/unit/optim/OptimizerTest.cpp checks 5 and 20 steps of SGD, AdamW and RMSprop
// against torch.optim, LarsLambTest.cpp 20 steps of LARS and LAMB against timm.optim.
#include "fixres/optim/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/models/BatchNorm.h"

namespace fixres::optim {
namespace {

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

// name -> parameter, for the state dict.
template <typename F>
void forEachStatefulParameter(const torch::nn::Module& model, torch::optim::Optimizer& opt, F&& f) {
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    if (auto* s = parameterState(opt, item.value())) f(item.key(), *s);
}

}  // namespace

std::vector<ParameterGroup> parameterGroups(const torch::nn::Module& model,
                                            const OptimizerOptions& given) {
  OptimizerOptions o = given;
  if (o.kind->excludeNormAndBias) {
    o.normWeightDecay = o.normWeightDecay.value_or(0);
    o.biasWeightDecay = o.biasWeightDecay.value_or(0);
  }
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
  FIXRES_CHECK(!o.nesterov || (o.kind->nesterov && o.momentum > 0), UsageError,
               "--nesterov needs --opt sgd or lars and --momentum > 0");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (auto& g : parameterGroups(model, o)) {
    groups.emplace_back(g.parameters, o.kind->groupOptions(o, g.weightDecay));
    groups.back().options().set_lr(o.learningRate * g.lrScale);
  }
  return o.kind->make(std::move(groups), o);
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

std::vector<torch::Tensor> optimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                 OptimizerKind kind) {
  std::vector<torch::Tensor> out;
  for (auto& [key, s] : optimizer.state())
    kind->saveState(*s, [&out](const std::string&, const torch::Tensor& t) {
      if (t.defined()) out.push_back(t);
    });
  return out;
}

c10::Dict<std::string, at::Tensor> optimizerState(const torch::nn::Module& model,
                                                  torch::optim::Optimizer& optimizer,
                                                  OptimizerKind kind) {
  c10::Dict<std::string, at::Tensor> out;
  forEachStatefulParameter(model, optimizer, [&](const std::string& name, auto& s) {
    kind->saveState(s, [&](const std::string& key, const torch::Tensor& t) {
      if (t.defined()) out.insert(key + name, t.detach().cpu());
    });
  });
  return out;
}

void restoreOptimizerState(const c10::impl::GenericDict& dict, const torch::nn::Module& model,
                           torch::optim::Optimizer& optimizer, OptimizerKind kind,
                           const std::string& path) {
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    StateGet in;
    // The entry `key + name` on p's device, or an undefined tensor when absent.
    in.get = [&](const std::string& prefix, bool likeParameter) -> torch::Tensor {
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
    in.fail = [&](const std::string& what) {
      FIXRES_FAIL(WeightsError, path, ": incomplete ", kind->name, " state of ", item.key(), " (",
                  what, ")");
    };
    if (auto state = kind->loadState(in)) setParameterState(optimizer, p, std::move(state));
  }
}

}  // namespace fixres::optim
