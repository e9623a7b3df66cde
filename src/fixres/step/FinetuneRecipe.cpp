// FixRes fine-tuning: each family's recipe, applied.
#include "fixres/step/FinetuneRecipe.h"

#include <cmath>

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
  if (scope == models::FinetuneScope::kAll) {
    // Every parameter, the whole model in train mode, the rate decaying from the head down by
    // the family's layer groups.
    FinetuneRecipe r;
    const int64_t head = family.layerOf ? family.headLayer(*model) : 0;
    for (const auto& p : model->named_parameters()) {
      r.trainable.push_back(p.value());
      if (family.layerOf) {
        const int64_t layer = family.layerOf(*model, p.key());
        FIXRES_CHECK(layer >= 0 && layer <= head, InternalError, family.name, ": parameter ",
                     p.key(), " in layer ", layer, " outside [0, ", head, "]");
        r.lrScale.push_back(std::pow(layerDecay, static_cast<double>(head - layer)));
      }
    }
    r.trainMode.push_back(model);
    return r;
  }
  if (family.finetuneScope != nullptr) return family.finetuneScope(*model, scope, bnAffine);
  switch (scope) {
    case models::FinetuneScope::kRecipe:
    case models::FinetuneScope::kHead:
      return family.finetune(*model, bnAffine);
    case models::FinetuneScope::kAll:
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
