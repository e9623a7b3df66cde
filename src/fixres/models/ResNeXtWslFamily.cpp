// The ResNeXt-101 32x16d family: the middle width of the WSL ResNeXts (Mahajan et al. 2018,
// "Exploring the Limits of Weakly Supervised Pretraining"), between torchvision's 32x8d and the
// 32x48d FixRes fine-tunes. Built as torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32,
// width_per_group=16): its keys are torchvision's and timm's, and the ResNet family's FixRes
// recipe (classifier and last BatchNorm) applies, so a model of it reports that family.
#include <memory>
#include <optional>
#include <string>

#include "fixres/models/Family.h"
#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"

namespace fixres::models {
namespace {

constexpr const char* kWslName = "resnext101_32x16d";

// timm's ig_resnext101_32x16d cfg: 224 px, crop 0.875, bilinear, ImageNet's mean and std.
std::optional<ArchInfo> findResNeXtWsl(const std::string& name) {
  if (name != kWslName && name != "ig_resnext101_32x16d") return std::nullopt;
  ArchInfo info;
  info.name = kWslName;
  return info;
}

Model createResNeXtWsl(const std::string& name, const ModelOptions& options) {
  ResNetConfig c;
  c.name = name;
  c.layers = {3, 4, 23, 3};
  c.groups = 32;
  c.widthPerGroup = 16;
  c.numClasses = options.numClasses;
  return std::make_shared<ResNetImpl>(c);
}

}  // namespace

const ArchitectureFamily& resnextWslFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "resnext-wsl";
    f.names = {kWslName};
    f.aliases = {"ig_resnext101_32x16d"};
    f.find = findResNeXtWsl;
    f.create = createResNeXtWsl;
    f.finetune = resnetFamily().finetune;
    f.torchvisionNames = true;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
