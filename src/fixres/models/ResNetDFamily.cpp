// The ResNet-D family (timm's resnet26d and resnet50d; Bag of Tricks, He et al. 2019): the ResNet
// family's bottleneck blocks and layout with a deep stem (three 3x3 convolutions) and shortcuts
// that average-pool before their projection. Built by ResNetImpl (ResNet.h: stemWidth, avgDown),
// so fine-tuning, layer groups, weight loading and export are the ResNet family's.
#include <array>
#include <optional>
#include <string>

#include "fixres/models/Family.h"
#include "fixres/models/ResNet.h"

namespace fixres::models {
namespace {

struct ResNetDEntry {
  const char* name;
  std::array<int64_t, 4> layers;
};

// timm's resnet.py definitions (stem_width 32, stem_type 'deep', avg_down).
constexpr ResNetDEntry kResNetD[] = {{"resnet26d", {2, 2, 2, 2}}, {"resnet50d", {3, 4, 6, 3}}};

const ResNetDEntry* findResNetDEntry(const std::string& name) {
  for (const auto& e : kResNetD)
    if (name == e.name) return &e;
  return nullptr;
}

// timm's pretrained cfg for both (_ttcfg): trained at 224 with crop 0.875, tested at 288 with
// crop 0.95, bicubic, ImageNet's mean and std.
std::optional<ArchInfo> findResNetD(const std::string& name) {
  const ResNetDEntry* e = findResNetDEntry(name);
  if (!e) return std::nullopt;
  ArchInfo info;
  info.name = e->name;
  info.defaultSize = 224;
  info.testSize = 288;
  info.cropFraction = 0.95;
  info.bicubic = true;
  return info;
}

Model createResNetD(const std::string& name, const ModelOptions& options) {
  const ResNetDEntry* e = findResNetDEntry(name);
  ResNetConfig c;
  c.name = e->name;
  c.layers = e->layers;
  c.numClasses = options.numClasses;
  c.stemWidth = 32;
  c.avgDown = true;
  return std::make_shared<ResNetImpl>(c);
}

}  // namespace

const ArchitectureFamily& resnetDFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "resnet-d";
    for (const auto& e : kResNetD) f.names.emplace_back(e.name);
    f.find = findResNetD;
    f.create = createResNetD;
    f.finetune = resnetFamily().finetune;
    f.layerOf = resnetFamily().layerOf;
    f.headLayer = resnetFamily().headLayer;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
