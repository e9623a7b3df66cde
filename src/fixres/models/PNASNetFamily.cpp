// The PNASNet family's registration: timm's pnasnet5large (FixRes's PNASNet), timm's preprocessing
// of the TensorFlow weights, the reference's fine-tuning recipe.
#include <memory>
#include <optional>
#include <string>

#include "fixres/models/Family.h"
#include "fixres/models/PNASNet.h"

namespace fixres::models {
namespace {

constexpr const char* kPNASNetName = "pnasnet5large";

// timm's pretrained cfg (pnasnet5large.tf_in1k): 331 px, crop 0.911, bicubic, and the TensorFlow
// model's inputs in [-1, 1].
std::optional<ArchInfo> findPNASNet(const std::string& name) {
  if (name != kPNASNetName && name != "PNASNet") return std::nullopt;  // timm's name, FixRes's
  ArchInfo info;
  info.name = kPNASNetName;
  info.defaultSize = 331;
  info.testSize = 331;
  info.cropFraction = 0.911;
  info.bicubic = true;
  info.mean = {0.5f, 0.5f, 0.5f};
  info.std = {0.5f, 0.5f, 0.5f};
  return info;
}

Model createPNASNet(const std::string& /*name*/, const ModelOptions& options) {
  return std::make_shared<PNASNetImpl>(options);
}

// The reference's main_finetune: cell_9, cell_10, cell_11 and last_linear learn; the three cells
// run in train mode (their BatchNorms re-estimate their statistics); the rest is frozen in eval
// mode. With `bnAffine` nothing is added: the BatchNorm weights and biases of those cells are
// among their parameters, which learn in any case.
FinetuneRecipe pnasnetRecipe(ModelImpl& model, bool /*bnAffine*/) {
  auto& m = familyModel<PNASNetImpl>(model);
  FinetuneRecipe r;
  for (int64_t i = PNASNetImpl::kNumCells - 3; i < PNASNetImpl::kNumCells; ++i) {
    r.addParameters(*m.cell(i));
    r.trainMode.push_back(m.cell(i).ptr());
  }
  r.addParameters(*m.classifier());
  return r;
}

// FixRes's README: the PNASNet fine-tuned at 480 px (inputs normalised with mean = std = 0.5).
std::vector<PublishedWeights> pnasnetPublished() {
  return {fixresRelease("FixPNASNet", "PNASNet", "PNASNet.pth", 331, 480, 83.7,
                        /*halfNormalization=*/true)};
}

}  // namespace

const ArchitectureFamily& pnasnetFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "pnasnet";
    f.names = {kPNASNetName};
    f.aliases = {"PNASNet"};
    f.find = findPNASNet;
    f.create = createPNASNet;
    f.finetune = pnasnetRecipe;
    f.published = pnasnetPublished;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
