// An optimizer as one descriptor: everything fixres knows of it in one value, so that an
// optimizer is one file (its descriptor and its steps) plus one line in OptimizerList.h. The
// descriptor says how to make it over parameter groups, which flags it reads, its update paths
// (loop, foreach, fused where they exist), the names of its per-parameter state in checkpoints,
// and whether a CUDA graph can hold its step.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::optim {

struct OptimizerOptions;

// A step the fused kernels may skip on the device, as torch.optim does with GradScaler's
// found_inf: `found` a float 0-dim tensor on the parameters' device (nonzero: leave parameters and
// state as they are); `pending` the steps skipped that way since the step counts were last put
// right (rewindStepCounts), which AdamW's bias correction subtracts. The first step then starts
// SGD's momentum from zeros (the same values as from the gradient).
// `lr` (float32 0-dim on the device; undefined: the groups' own rates) is the base rate read at
// run time, as a captured step needs: group k learns at lr x scales[k] (the tensor_lr kernels).
struct DeviceSkip {
  torch::Tensor found, pending;
  torch::Tensor lr;
  std::vector<double> scales;
};

// What a checkpoint holds of one parameter's state: put(key, tensor) writes an entry (the key is
// prefixed to the parameter's name: "exp_avg/" gives "exp_avg/fc.weight"); get(key, likeParameter)
// reads one (undefined when absent; shaped and placed as the parameter when likeParameter, else a
// scalar), and fail(what) raises the checkpoint's WeightsError naming the parameter.
using StatePut = std::function<void(const std::string& key, const torch::Tensor& t)>;
struct StateGet {
  std::function<torch::Tensor(const std::string& key, bool likeParameter)> get;
  std::function<void(const std::string& what)> fail;
};

// A setting of one optimizer alone (LARS's trust coefficient, LAMB's betas): its row (a flag of
// train and finetune, a key of config.json, its range) and its default. The run's value is
// OptimizerOptions::params[row.key]; a group's step reads it from OwnOptions::params.
struct OptimizerParam {
  Setting row;
  double value;
};

struct OptimizerDescriptor {
  const char* name;  // --opt's value, config.json's "opt", the checkpoint's optimizer_kind
  const char* help;  // one phrase for --opt's help: "lars (MLPerf's ...)"
  bool readsMomentum = false;  // --momentum applies
  bool nesterov = false;       // --nesterov applies
  // Norm layers' parameters and biases take no weight decay unless --norm-weight-decay or
  // --bias-weight-decay say otherwise (LARS: BatchNorm and biases excluded, as MLPerf's ResNet-50).
  bool excludeNormAndBias = false;
  // The optimizer over `groups` (each group's options from groupOptions), with `defaults`.
  std::unique_ptr<torch::optim::Optimizer> (*make)(
      std::vector<torch::optim::OptimizerParamGroup> groups, const OptimizerOptions& o) = nullptr;
  // A group's options: the run's, with the group's weight decay.
  std::unique_ptr<torch::optim::OptimizerOptions> (*groupOptions)(const OptimizerOptions& o,
                                                                  double weightDecay) = nullptr;
  // Its per-parameter state to a checkpoint and back (nullptr: the parameter has none there).
  void (*saveState)(torch::optim::OptimizerParamState& s, const StatePut& put) = nullptr;
  std::unique_ptr<torch::optim::OptimizerParamState> (*loadState)(const StateGet& in) = nullptr;
  // Takes `skipped` steps off a state's step count (nullptr: no step count).
  void (*rewindStep)(torch::optim::OptimizerParamState& s, int64_t skipped) = nullptr;
  // The update paths of one group. loop: nullptr takes the optimizer's own step(); foreach and
  // fused: nullptr when there is none (fused: in this build).
  void (*loopStep)(torch::optim::Optimizer& opt, torch::optim::OptimizerParamGroup& g) = nullptr;
  void (*foreachStep)(torch::optim::Optimizer& opt, torch::optim::OptimizerParamGroup& g) = nullptr;
  void (*fusedStep)(torch::optim::Optimizer& opt, torch::optim::OptimizerParamGroup& g,
                    const DeviceSkip* skip, double lrScale) = nullptr;
  // The fused step reads its learning rate from DeviceSkip::lr, so a CUDA graph can replay it.
  bool capturable = false;
  // Its own settings (none for sgd, adamw, rmsprop: they read the shared ones).
  std::vector<OptimizerParam> params;
};

// --- For the optimizers' own files ---

// The parameters of a group that have a gradient, with their gradients.
struct GroupTensors {
  std::vector<torch::Tensor> params, grads;
};
GroupTensors withGrads(torch::optim::OptimizerParamGroup& group);
// The gradients with weight decay added (new tensors: p.grad stays as it is), as torch.optim's
// _foreach_add(grads, params, alpha=weight_decay).
std::vector<torch::Tensor> decayed(const GroupTensors& t, double weightDecay);

// The state of `p` in `opt`, made (default-constructed) when it has none yet.
torch::optim::OptimizerParamState* parameterState(torch::optim::Optimizer& optimizer,
                                                  const torch::Tensor& p);
torch::optim::OptimizerParamState& setParameterState(
    torch::optim::Optimizer& optimizer, const torch::Tensor& p,
    std::unique_ptr<torch::optim::OptimizerParamState> state);
template <typename State>
State& stateOf(torch::optim::Optimizer& opt, const torch::Tensor& p) {
  if (auto* s = parameterState(opt, p)) return static_cast<State&>(*s);
  return static_cast<State&>(setParameterState(opt, p, std::make_unique<State>()));
}

// The options of the optimizers LibTorch lacks (LARS, LAMB): the run's rate, momentum, decay,
// and the values of the descriptor's own settings by key (every one of them, defaults included).
struct OwnOptions : torch::optim::OptimizerCloneableOptions<OwnOptions> {
  double lr = 0, momentum = 0, weightDecay = 0;
  bool nesterov = false;
  std::map<std::string, double> params;
  double get_lr() const override { return lr; }
  void set_lr(const double v) override { lr = v; }
};
std::unique_ptr<torch::optim::OptimizerOptions> ownGroupOptions(const OptimizerOptions& o,
                                                                double weightDecay);
// An optimizer whose step is `step` over the whole optimizer (its groups and states).
std::unique_ptr<torch::optim::Optimizer> makeOwnOptimizer(
    std::vector<torch::optim::OptimizerParamGroup> groups, const OptimizerOptions& o,
    void (*step)(torch::optim::Optimizer& opt));

// The two state layouts of the optimizers here: a momentum buffer (SGD, LARS: key `key`), and
// Adam's moments with a step count (AdamW, LAMB: exp_avg/, exp_avg_sq/, step/).
void saveMomentum(torch::optim::OptimizerParamState& s, const StatePut& put, const char* key);
std::unique_ptr<torch::optim::OptimizerParamState> loadMomentum(const StateGet& in,
                                                                const char* key);
void saveAdam(torch::optim::OptimizerParamState& s, const StatePut& put);
std::unique_ptr<torch::optim::OptimizerParamState> loadAdam(const StateGet& in);
void rewindAdam(torch::optim::OptimizerParamState& s, int64_t skipped);
// AdamW's and LAMB's state of p for this step: zero moments on the first, the count advanced.
torch::optim::AdamWParamState& adamStepState(torch::optim::Optimizer& opt, const torch::Tensor& p);

}  // namespace fixres::optim
