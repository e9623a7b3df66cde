// The data-parallel SGD step.
#include "fixres/engine/TrainStep.h"

namespace fixres::engine {

TrainStep::TrainStep(models::ResNet model, StepOptions o, distributed::Communicator& comm)
    : model_(std::move(model)), o_(o), comm_(comm) {
  if (o_.finetune) {
    recipe_ = finetuneRecipe(model_, o_.finetuneBnAffine);
    freezeForFinetune(*model_, recipe_);
  }
  std::vector<torch::Tensor> all;
  for (auto& p : model_->parameters()) all.push_back(p);
  for (auto& b : model_->buffers()) {
    all.push_back(b);
    buffers_.push_back(b);
  }
  distributed::GradReducer::broadcastFromRoot(comm_, all);
  params_ = trainableParameters();
  optimizer_ =
      std::make_unique<torch::optim::SGD>(params_, torch::optim::SGDOptions(o_.learningRate)
                                                       .momentum(o_.momentum)
                                                       .weight_decay(o_.weightDecay)
                                                       .nesterov(o_.nesterov));
  reducer_ = std::make_unique<distributed::GradReducer>(comm_, params_);
}

std::vector<torch::Tensor> TrainStep::trainableParameters() const {
  std::vector<torch::Tensor> out;
  for (auto& p : model_->parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

void TrainStep::setTrainingMode() {
  if (!o_.finetune) {
    model_->train();
  } else {
    setFinetuneMode(*model_, recipe_);
  }
}

void TrainStep::begin() {
  if (comm_.worldSize() > 1) distributed::GradReducer::broadcastFromRoot(comm_, buffers_);
  // Gradients set to none rather than zeroed: the first backward then writes them in place of
  // a zero fill plus an accumulation pass.
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

double TrainStep::backward(const torch::Tensor& images, const torch::Tensor& labels,
                           double lossScale) {
  torch::Tensor loss;
  {
    AutocastGuard autocast(images.device(), o_.precision);
    auto logits = model_->forward(images);
    loss = torch::nn::functional::cross_entropy(
        logits, labels,
        torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(o_.labelSmoothing));
  }
  (lossScale == 1.0 ? loss : loss * lossScale).backward();
  return loss.item<double>();
}

void TrainStep::finish(double lr) {
  for (auto& group : optimizer_->param_groups())
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
  reducer_->reduce();
  optimizer_->step();
}

double TrainStep::step(const torch::Tensor& images, const torch::Tensor& labels, double lr) {
  begin();
  double loss = backward(images, labels, 1.0);
  finish(lr);
  return loss;
}

}  // namespace fixres::engine
