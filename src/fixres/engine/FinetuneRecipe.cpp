// FixRes fine-tuning recipes.
#include "fixres/engine/FinetuneRecipe.h"

namespace fixres::engine {

FinetuneRecipe resnetFinetuneRecipe(models::ResNetImpl& model, bool bnAffine) {
  FinetuneRecipe r;
  for (auto& p : model.classifier()->parameters()) r.trainable.push_back(p);
  auto& bn = model.lastBatchNorm();
  if (bnAffine)
    for (auto& p : bn->parameters()) r.trainable.push_back(p);
  r.trainMode.push_back(bn.ptr());
  return r;
}

FinetuneRecipe finetuneRecipe(models::ResNet& model, bool bnAffine) {
  return resnetFinetuneRecipe(*model, bnAffine);
}

void freezeForFinetune(torch::nn::Module& model, const FinetuneRecipe& recipe) {
  for (auto& p : model.parameters()) p.set_requires_grad(false);
  for (auto p : recipe.trainable) p.set_requires_grad(true);
}

void setFinetuneMode(torch::nn::Module& model, const FinetuneRecipe& recipe) {
  model.eval();
  for (auto& m : recipe.trainMode) m->train();
}

}  // namespace fixres::engine
