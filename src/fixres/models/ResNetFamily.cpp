// The ResNet family's registration: torchvision's ResNet table plus FixRes's names and a tiny demo
// model, torchvision's preprocessing, the FixRes paper's fine-tuning recipe.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/Family.h"
#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"

namespace fixres::models {
namespace {

struct ResNetEntry {
  const char* name;
  const char* aliasOf;  // nullptr for canonical names
  bool bottleneck;
  std::array<int64_t, 4> layers;
  int64_t groups;
  int64_t widthPerGroup;
};

// torchvision's definitions (resnet.py): block type, blocks per stage, groups, width per group.
const std::vector<ResNetEntry>& resnetTable() {
  static const std::vector<ResNetEntry> kTable = {
      {"resnet18", nullptr, false, {2, 2, 2, 2}, 1, 64},
      {"resnet34", nullptr, false, {3, 4, 6, 3}, 1, 64},
      {"resnet50", nullptr, true, {3, 4, 6, 3}, 1, 64},
      {"resnet101", nullptr, true, {3, 4, 23, 3}, 1, 64},
      {"resnet152", nullptr, true, {3, 8, 36, 3}, 1, 64},
      {"resnext50_32x4d", nullptr, true, {3, 4, 6, 3}, 32, 4},
      {"resnext101_32x8d", nullptr, true, {3, 4, 23, 3}, 32, 8},
      {"resnext101_32x48d", nullptr, true, {3, 4, 23, 3}, 32, 48},
      {"wide_resnet50_2", nullptr, true, {3, 4, 6, 3}, 1, 128},
      {"resnet_tiny", nullptr, false, {1, 1, 1, 1}, 1, 64},
      // FixRes names.
      {"ResNet50", "resnet50", true, {3, 4, 6, 3}, 1, 64},
      {"IGAM_Resnext101_32x48d", "resnext101_32x48d", true, {3, 4, 23, 3}, 32, 48},
  };
  return kTable;
}

const ResNetEntry* findResNetEntry(const std::string& name) {
  for (const auto& e : resnetTable())
    if (name == e.name) return &e;
  return nullptr;
}

// torchvision's weights: trained at 224, tested at a 224 crop of the image resized to 256,
// bilinear, ImageNet's mean and std (ArchInfo's defaults).
std::optional<ArchInfo> findResNet(const std::string& name) {
  const ResNetEntry* e = findResNetEntry(name);
  if (!e) return std::nullopt;
  ArchInfo info;
  info.name = e->aliasOf ? e->aliasOf : e->name;
  info.outputStride = info.name == "resnet_tiny" ? 8 : 32;
  return info;
}

Model createResNet(const std::string& name, const ModelOptions& options) {
  return std::make_shared<ResNetImpl>(resnetConfig(name, options.numClasses));
}

// FixRes (Touvron et al. 2019, section 5): the classifier learns; the last BatchNorm before
// pooling updates its running statistics, and with `bnAffine` also learns its weight and bias
// (the paper's variant).
FinetuneRecipe resnetRecipe(ModelImpl& model, bool bnAffine) {
  auto& m = familyModel<ResNetImpl>(model);
  FinetuneRecipe r;
  r.addParameters(*m.classifier());
  auto& bn = m.lastBatchNorm();
  if (bnAffine) r.addParameters(*bn);
  r.trainMode.push_back(bn.ptr());
  return r;
}

// The layer groups, as timm's resnet group_matcher (fine): the stem (conv1, bn1) 0, each block
// its own layer in order (layer1.0 1, layer1.1 2, ...), the classifier last.
int64_t resnetBlocksBefore(const ResNetImpl& m, int stage) {
  const torch::nn::Sequential* stages[] = {&m.layer1, &m.layer2, &m.layer3, &m.layer4};
  int64_t n = 0;
  for (int s = 0; s < stage; ++s) n += *stages[s] ? static_cast<int64_t>((*stages[s])->size()) : 0;
  return n;
}

int64_t resnetHeadLayer(const ModelImpl& model) {
  return resnetBlocksBefore(familyModel<ResNetImpl>(model), 4) + 1;
}

int64_t resnetLayerOf(const ModelImpl& model, const std::string& name) {
  if (name.size() > 7 && name.rfind("layer", 0) == 0 && name[6] == '.') {
    const int64_t stage = name[5] - '1';
    const int64_t block = std::stoll(name.substr(7, name.find('.', 7) - 7));
    return resnetBlocksBefore(familyModel<ResNetImpl>(model), static_cast<int>(stage)) + block + 1;
  }
  if (name.rfind("conv1.", 0) == 0 || name.rfind("bn1.", 0) == 0) return 0;
  return resnetHeadLayer(model);
}

// FixRes: https://github.com/facebookresearch/FixRes (README, hubconf.py). Top-1 at the test
// resolution, ImageNet val. (v2: fine-tuned with transforms_v2: flip, shifted centre crop,
// colour jitter.)
std::vector<PublishedWeights> resnetPublished() {
  return {
      fixresRelease("FixResNet50", "ResNet50", "ResNet50_v2.pth", 224, 384, 79.1),
      fixresRelease("FixResNet50_v1", "ResNet50", "ResNetFinetune.pth", 224, 384, 79.0),
      fixresRelease("FixResNet50CutMix", "ResNet50", "ResNet50_CutMix_v2.pth", 224, 320, 79.8),
      fixresRelease("FixResNet50CutMix_v1", "ResNet50", "ResNetCutMix.pth", 224, 320, 79.7),
      fixresRelease("FixResNeXt101_32x48d", "IGAM_Resnext101_32x48d", "ResNext101_32x48d_v2.pth",
                    224, 320, 86.4),
      fixresRelease("FixResNeXt101_32x48d_v1", "IGAM_Resnext101_32x48d", "ResNeXt_101_32x48d.pth",
                    224, 320, 86.3),
      fixresRelease("ResNet50_no_adaptation", "ResNet50", "ResNet_no_adaptation.pth", 224, 224,
                    77.0),
  };
}

}  // namespace

ResNetConfig resnetConfig(const std::string& name, int64_t numClasses) {
  checkNumClasses(numClasses);
  const ResNetEntry* e = findResNetEntry(name);
  if (!e) {
    architectureInfo(name);  // names the problem for unknown names
    FIXRES_FAIL(UsageError, "'", name, "' is not a ResNet-family architecture");
  }
  ResNetConfig c;
  c.name = e->aliasOf ? e->aliasOf : e->name;
  c.bottleneck = e->bottleneck;
  c.layers = e->layers;
  c.groups = e->groups;
  c.widthPerGroup = e->widthPerGroup;
  c.numClasses = numClasses;
  if (c.name == "resnet_tiny") {
    // Basic blocks [1,1,1,1], widths 16/32/64/128, small-image stem: ~0.7M parameters.
    c.widths = {16, 32, 64, 128};
    c.smallStem = true;
  }
  return c;
}

const ArchitectureFamily& resnetFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "resnet";
    for (const auto& e : resnetTable()) (e.aliasOf ? f.aliases : f.names).emplace_back(e.name);
    f.find = findResNet;
    f.create = createResNet;
    f.finetune = resnetRecipe;
    f.layerOf = resnetLayerOf;
    f.headLayer = resnetHeadLayer;
    f.published = resnetPublished;
    f.torchvisionNames = true;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
