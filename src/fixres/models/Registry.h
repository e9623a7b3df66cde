// Model registry: architecture names (FixRes's, torchvision's, timm's) -> models.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "fixres/models/Model.h"
#include "fixres/models/ResNet.h"

namespace fixres::models {

// What the rest of fixres needs to know about an architecture without building it.
struct ArchInfo {
  std::string name;  // canonical name (resnet50, tf_efficientnet_b0, pnasnet5large, ...)
  Family family = Family::kResNet;
  int outputStride = 32;  // total downsampling of the last feature map
  int defaultSize = 224;  // the resolution its published weights were trained at
  // The normalisation its published weights expect (the reference's per architecture).
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// The architecture `name` names. Names are case-sensitive: torchvision names (resnet50,
// resnext101_32x8d, ...), FixRes names (ResNet50, IGAM_Resnext101_32x48d, PNASNet), timm names
// (tf_efficientnet_b0 ... b8, tf_efficientnet_l2, efficientnet_b0 ... b7, with timm's weight
// suffixes such as _ap and _ns; pnasnet5large) and resnet_tiny (see docs/models.md). Unknown
// name -> UsageError listing the known names.
ArchInfo architectureInfo(const std::string& name);

// Builds an architecture by name with random initialisation (torchvision's for ResNets, timm's
// for the others) from torch's generator. numClasses < 1 or an unknown name -> UsageError.
Model createModel(const std::string& name, const ModelOptions& options);
Model createModel(const std::string& name, int64_t numClasses = 1000);

// The ResNet configuration of a ResNet-family name (UsageError for other names).
ResNetConfig modelConfig(const std::string& name, int64_t numClasses = 1000);

// Every accepted name (canonical names first, then aliases).
std::vector<std::string> knownArchitectures();

// Total downsampling of the last feature map: 32 (ImageNet stems), 8 (small-image stem).
int outputStride(const std::string& name);

}  // namespace fixres::models
