// FixRes fine-tuning: each family's recipe, applied.
#include "fixres/engine/FinetuneRecipe.h"

#include "fixres/common/Error.h"

namespace fixres::engine {

const ChoiceTable<models::FinetuneScope>& finetuneScopes() {
  static const ChoiceTable<models::FinetuneScope> kTable = {
      "fine-tuning scope",
      {{"recipe", models::FinetuneScope::kRecipe},
       {"head", models::FinetuneScope::kHead},
       {"head-pos", models::FinetuneScope::kHeadPos},
       {"all", models::FinetuneScope::kAll}}};
  return kTable;
}

FinetuneRecipe finetuneRecipe(models::Model& model, bool bnAffine, models::FinetuneScope scope,
                              double layerDecay) {
  const models::ArchitectureFamily& family = model->family();
  FIXRES_CHECK(family.finetune != nullptr, InternalError, "no fine-tuning recipe for the ",
               family.name, " family");
  if (family.finetuneScope != nullptr)
    return family.finetuneScope(*model, scope, bnAffine, layerDecay);
  switch (scope) {
    case models::FinetuneScope::kRecipe:
    case models::FinetuneScope::kHead:
      return family.finetune(*model, bnAffine);
    case models::FinetuneScope::kAll: {
      FinetuneRecipe r;
      r.addParameters(*model);
      r.trainMode.push_back(model);
      return r;
    }
    case models::FinetuneScope::kHeadPos:
      break;
  }
  FIXRES_FAIL(UsageError, "--finetune-scope head-pos: a ", family.name,
              " model has no position embedding (use recipe, head or all)");
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
