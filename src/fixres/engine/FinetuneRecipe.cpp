// FixRes fine-tuning recipes.
#include "fixres/engine/FinetuneRecipe.h"

#include "fixres/common/Error.h"

namespace fixres::engine {

namespace {
void addParameters(FinetuneRecipe& r, torch::nn::Module& m) {
  for (auto& p : m.parameters()) r.trainable.push_back(p);
}
}  // namespace

FinetuneRecipe resnetFinetuneRecipe(models::ResNetImpl& model, bool bnAffine) {
  FinetuneRecipe r;
  addParameters(r, *model.classifier());
  auto& bn = model.lastBatchNorm();
  if (bnAffine) addParameters(r, *bn);
  r.trainMode.push_back(bn.ptr());
  return r;
}

FinetuneRecipe efficientNetFinetuneRecipe(models::EfficientNetImpl& model, bool bnAffine) {
  FinetuneRecipe r;
  addParameters(r, *model.classifier());
  addParameters(r, *model.conv_head);
  if (bnAffine) addParameters(r, *model.bn2);
  r.trainMode.push_back(model.conv_head.ptr());
  r.trainMode.push_back(model.bn2.ptr());
  return r;
}

FinetuneRecipe pnasnetFinetuneRecipe(models::PNASNetImpl& model, bool /*bnAffine*/) {
  // With bnAffine nothing is added: the BatchNorm weights and biases of cells 9-11 are among
  // those cells' parameters, which learn in any case.
  FinetuneRecipe r;
  for (int64_t i = models::PNASNetImpl::kNumCells - 3; i < models::PNASNetImpl::kNumCells; ++i) {
    addParameters(r, *model.cell(i));
    r.trainMode.push_back(model.cell(i).ptr());
  }
  addParameters(r, *model.classifier());
  return r;
}

FinetuneRecipe finetuneRecipe(models::Model& model, bool bnAffine) {
  if (auto* m = dynamic_cast<models::ResNetImpl*>(model.get()))
    return resnetFinetuneRecipe(*m, bnAffine);
  if (auto* m = dynamic_cast<models::EfficientNetImpl*>(model.get()))
    return efficientNetFinetuneRecipe(*m, bnAffine);
  if (auto* m = dynamic_cast<models::PNASNetImpl*>(model.get()))
    return pnasnetFinetuneRecipe(*m, bnAffine);
  FIXRES_FAIL(InternalError, "no fine-tuning recipe for this architecture");
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
