// The FixRes fine-tuning recipe of each architecture family: which parameters learn, and which
// modules keep their training-mode behaviour (BatchNorm re-estimating its statistics at the
// test resolution) while the rest of the network runs in eval mode.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <vector>

#include "fixres/models/EfficientNet.h"
#include "fixres/models/Model.h"
#include "fixres/models/PNASNet.h"
#include "fixres/models/ResNet.h"

namespace fixres::engine {

struct FinetuneRecipe {
  std::vector<torch::Tensor> trainable;  // parameters that learn (all others are frozen)
  std::vector<std::shared_ptr<torch::nn::Module>> trainMode;  // modules left in train mode
};

// ResNet family (FixRes, Touvron et al. 2019, section 5): the classifier learns; the last
// BatchNorm before pooling updates its running statistics, and with `bnAffine` also learns its
// weight and bias (the paper's variant).
FinetuneRecipe resnetFinetuneRecipe(models::ResNetImpl& model, bool bnAffine);

// EfficientNet (the reference's main_finetune): the classifier and conv_head learn; conv_head
// and bn2 run in train mode (bn2 re-estimates its statistics), and with `bnAffine` bn2 also
// learns its weight and bias.
FinetuneRecipe efficientNetFinetuneRecipe(models::EfficientNetImpl& model, bool bnAffine);

// PNASNet (the reference's main_finetune): cell_9, cell_10, cell_11 and last_linear learn; the
// three cells run in train mode (their BatchNorms re-estimate their statistics); the rest is
// frozen in eval mode. `bnAffine` adds nothing: those cells' BatchNorm weights and biases
// already learn.
FinetuneRecipe pnasnetFinetuneRecipe(models::PNASNetImpl& model, bool bnAffine);

// The recipe of `model`'s family.
FinetuneRecipe finetuneRecipe(models::Model& model, bool bnAffine);

// Freezes every parameter but recipe.trainable.
void freezeForFinetune(torch::nn::Module& model, const FinetuneRecipe& recipe);
// Eval mode everywhere, then train mode on recipe.trainMode.
void setFinetuneMode(torch::nn::Module& model, const FinetuneRecipe& recipe);

}  // namespace fixres::engine
