// The references' exponential moving average of a model's parameters and buffers.
#include "fixres/step/ModelEma.h"

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {

double adjustedEmaDecay(double decay, int64_t worldSize, int64_t batch, int64_t emaSteps,
                        int64_t epochs) {
  const double adjust = static_cast<double>(worldSize) * static_cast<double>(batch) *
                        static_cast<double>(emaSteps) / static_cast<double>(epochs);
  const double alpha = std::min(1.0, (1.0 - decay) * adjust);
  return 1.0 - alpha;
}

void EmaOptions::validate() const {
  visitSettings(*this, [](const Setting& s, double v) { checkSetting(s, v); });
}

ModelEma::ModelEma(models::Model average, EmaOptions options)
    : average_(std::move(average)), o_(options) {
  o_.validate();
  // Evaluated (and saved) only: never trained, no gradients.
  for (auto& p : average_->parameters()) p.set_requires_grad(false);
  average_->eval();
}

bool ModelEma::afterStep(const torch::nn::Module& model, int64_t epoch, int64_t iteration) {
  if (iteration % o_.steps != 0) return false;
  update(model);
  // The references restart the average after every update of a warm-up epoch, so it starts from
  // the weights at the end of warm-up.
  if (static_cast<double>(epoch) < o_.warmupEpochs) restartAveraging();
  return true;
}

void ModelEma::update(const torch::nn::Module& model) {
  torch::NoGradGuard noGrad;
  const auto source = models::stateDict(model);
  const double decay = o_.appliedDecay();
  for (const auto& item : models::stateDict(*average_)) {
    at::Tensor avg = item.value();
    FIXRES_CHECK(source.contains(item.key()), InternalError, "EMA: the model has no ", item.key());
    const at::Tensor p = source.at(item.key()).to(avg.device());
    if (nAveraged_ == 0) {
      avg.copy_(p);
    } else if (avg.is_floating_point()) {
      // decay * avg + (1 - decay) * p, in the order and precision PyTorch evaluates it.
      avg.mul_(decay).add_(p.mul(1.0 - decay));
    } else {
      // An integer tensor times a Python float is a float32 tensor; copy_ truncates it back.
      avg.copy_(avg.mul(decay).add(p.mul(1.0 - decay)));
    }
  }
  ++nAveraged_;
}

c10::Dict<std::string, at::Tensor> ModelEma::stateDict() const {
  c10::Dict<std::string, at::Tensor> out;
  out.insert("n_averaged", torch::scalar_tensor(nAveraged_, torch::kLong));
  for (const auto& item : models::stateDict(*average_))
    out.insert("module." + item.key(), item.value());
  return out;
}

void ModelEma::loadStateDict(const c10::IValue& value, const std::string& source) {
  FIXRES_CHECK(value.isGenericDict(), WeightsError, source, ": 'model_ema' is not a dict");
  const auto dict = value.toGenericDict();
  const auto it = dict.find(c10::IValue(std::string("n_averaged")));
  FIXRES_CHECK(it != dict.end() && it->value().isTensor() && it->value().toTensor().numel() == 1 &&
                   !it->value().toTensor().is_floating_point(),
               WeightsError, source, ": 'model_ema' has no integer 'n_averaged'");
  const int64_t n = it->value().toTensor().item<int64_t>();
  FIXRES_CHECK(n >= 0, WeightsError, source, ": 'model_ema' has n_averaged ", n);
  models::loadStateDict(*average_, value, models::LoadOptions{}, source + " (model_ema)");
  nAveraged_ = n;
}

CheckpointExtra ModelEma::checkpointState() {
  return CheckpointExtra{
      "model_ema", [this] { return stateDict(); },
      [this](const c10::IValue& value, const std::string& path) { loadStateDict(value, path); },
      [this](const std::string& path) {
        restartAveraging();
        log::warn(path,
                  " has no model_ema (a run without --model-ema): the EMA weights start over "
                  "at the next update");
      }};
}

}  // namespace fixres::engine
