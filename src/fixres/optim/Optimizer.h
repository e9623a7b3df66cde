// The optimizers of a run (--opt: the torchvision references' SGD, AdamW, RMSprop, and LARS and
// LAMB as timm.optim's) over parameter groups (the references' utils.set_weight_decay: norm layers
// and biases may have their own weight decay), and their per-parameter state by parameter name,
// for checkpoints. Each optimizer is an OptimizerDescriptor (OptimizerDescriptor.h), listed in
// OptimizerList.h.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/optim/OptimizerDescriptor.h"

namespace fixres::optim {

// An optimizer is its descriptor; the registry's entries are compared by address.
using OptimizerKind = const OptimizerDescriptor*;
// Every optimizer of OptimizerList.h, in its order.
const std::vector<OptimizerKind>& optimizers();
// Their names for --opt, config.json and checkpoints.
const ChoiceTable<OptimizerKind>& optimizerKinds();
// The optimizer named `name` (InternalError for a name that is not one: user input goes through
// optimizerKinds()).
OptimizerKind optimizerNamed(const std::string& name);
// --opt's help: each optimizer's phrase (text that lives as long as the program).
const char* optimizersHelp();

struct OptimizerOptions {
  OptimizerKind kind = optimizerNamed("sgd");
  double learningRate = 0.1;
  double momentum = 0.9;  // where the descriptor reads it
  double weightDecay = 1e-4;
  bool nesterov = false;  // where the descriptor allows it
  // Parameters of norm layers (BatchNorm, GroupNorm, LayerNorm, InstanceNorm, LocalResponseNorm);
  // nullopt: weightDecay (0 for an optimizer that excludes norm layers and biases).
  std::optional<double> normWeightDecay;
  // Parameters named "bias" (norm layers' included, as the references' custom key); nullopt: as
  // the other parameters of their layer (0 for an optimizer that excludes norm layers and biases).
  std::optional<double> biasWeightDecay;
  // A parameter's learning-rate multiplier (layer-wise decay); empty: 1 for every parameter.
  std::function<double(const torch::Tensor&)> lrScale;
  // The values of the optimizers' own settings (OptimizerParam) by key; a key left out: the
  // descriptor's default.
  std::map<std::string, double> params;
};

// Every optimizer's own settings at their defaults, by key (what a run starts from).
std::map<std::string, double> optimizerParamDefaults();
// Visits the row of every optimizer's own setting with its value in `values` (which holds every
// key: optimizerParamDefaults), in the registry's order: `v(row, value)`.
template <typename Map, typename V>
void visitOptimizerParams(Map& values, V&& v) {
  for (OptimizerKind k : optimizers())
    for (const OptimizerParam& p : k->params) v(p.row, values.at(p.row.key));
}

// One parameter group: its parameters (with their names in the model) and weight decay.
struct ParameterGroup {
  std::string role;  // "other", "norm" or "bias"
  double weightDecay = 0;
  double lrScale = 1;  // its learning rate is the run's times this
  std::vector<std::string> names;
  std::vector<torch::Tensor> parameters;
};

// The model's parameters that require a gradient, in groups as the references' set_weight_decay
// makes them: "other" (weightDecay), "norm", "bias"; empty groups left out.
std::vector<ParameterGroup> parameterGroups(const torch::nn::Module& model,
                                            const OptimizerOptions& options);

// The optimizer of `options.kind` over parameterGroups(model, options). UsageError for an option
// out of range (naming its flag).
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const torch::nn::Module& model,
                                                       const OptimizerOptions& options);

// Sets every group's learning rate: `lr` times the group's multiplier (`scales`, one per group,
// as groupLearningRateScales gives them; empty: lr for every group).
void setLearningRate(torch::optim::Optimizer& optimizer, double lr,
                     const std::vector<double>& scales = {});
// The learning-rate multiplier of each group makeOptimizer(model, options) makes, in its order.
std::vector<double> groupLearningRateScales(const torch::nn::Module& model,
                                            const OptimizerOptions& options);

// Every (defined) tensor of the optimizer's per-parameter state (momentum, moments), in no fixed
// order.
std::vector<torch::Tensor> optimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                 OptimizerKind kind);

// The per-parameter state as a flat dict of CPU tensors, keys as the descriptor's saveState puts
// them. sgd: {parameter name: momentum buffer} (fixres's checkpoint layout since 0.1.0); adamw
// and lamb: {"exp_avg/NAME", "exp_avg_sq/NAME", "step/NAME" (int64 scalar)}; rmsprop:
// {"square_avg/NAME", "momentum_buffer/NAME" (momentum > 0), "step/NAME"}; lars:
// {"momentum_buffer/NAME"}.
c10::Dict<std::string, at::Tensor> optimizerState(const torch::nn::Module& model,
                                                  torch::optim::Optimizer& optimizer,
                                                  OptimizerKind kind);
// Restores optimizerState()'s dict (parameters without an entry start fresh). WeightsError
// naming `path` when a tensor does not fit its parameter.
void restoreOptimizerState(const c10::impl::GenericDict& state, const torch::nn::Module& model,
                           torch::optim::Optimizer& optimizer, OptimizerKind kind,
                           const std::string& path);

}  // namespace fixres::optim
