// FixRes fine-tuning: the recipe of a model's family (models/Family.h: which parameters learn,
// which modules keep their training-mode behaviour, BatchNorm re-estimating its statistics at the
// test resolution, while the rest of the network runs in eval mode), applied to the model.
#pragma once

#include <torch/nn/module.h>

#include "fixres/common/Choice.h"
#include "fixres/models/Family.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

using FinetuneRecipe = models::FinetuneRecipe;

// --finetune-scope's names: recipe, head, head-pos, all.
const ChoiceTable<models::FinetuneScope>& finetuneScopes();

// The recipe of `model`'s family for `scope` (ArchitectureFamily::finetune, finetuneScope);
// `bnAffine`: the BatchNorm that re-estimates its statistics also learns its weight and bias (the
// FixRes paper's variant); `layerDecay`: kAll's learning-rate multiplier per layer below the
// head. UsageError for a scope the model has nothing for (head-pos without a position embedding).
FinetuneRecipe finetuneRecipe(models::Model& model, bool bnAffine,
                              models::FinetuneScope scope = models::FinetuneScope::kRecipe,
                              double layerDecay = 1);

// Freezes every parameter but recipe.trainable.
void freezeForFinetune(torch::nn::Module& model, const FinetuneRecipe& recipe);
// Eval mode everywhere, then train mode on recipe.trainMode.
void setFinetuneMode(torch::nn::Module& model, const FinetuneRecipe& recipe);

}  // namespace fixres::engine
