// FixRes fine-tuning: each family's recipe, applied.
#include "fixres/engine/FinetuneRecipe.h"

#include "fixres/common/Error.h"

namespace fixres::engine {

FinetuneRecipe finetuneRecipe(models::Model& model, bool bnAffine) {
  const models::ArchitectureFamily& family = model->family();
  FIXRES_CHECK(family.finetune != nullptr, InternalError, "no fine-tuning recipe for the ",
               family.name, " family");
  return family.finetune(*model, bnAffine);
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
