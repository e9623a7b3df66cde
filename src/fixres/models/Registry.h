// Model registry: architecture names (FixRes's, torchvision's, timm's) -> models, over the
// registered families (Family.h, Families.cpp).
#pragma once

#include <string>
#include <vector>

#include "fixres/models/Family.h"
#include "fixres/models/Model.h"

namespace fixres::models {

// The architecture `name` names, its family set. Names are case-sensitive: torchvision names
// (resnet50, resnext101_32x8d, ...), FixRes names (ResNet50, IGAM_Resnext101_32x48d, PNASNet),
// timm names (tf_efficientnet_b0 ... b8, tf_efficientnet_l2, efficientnet_b0 ... b7, with timm's
// weight suffixes such as _ap and _ns; pnasnet5large) and resnet_tiny (see docs/models.md).
// Unknown name -> UsageError listing the known names.
ArchInfo architectureInfo(const std::string& name);

// Builds an architecture by name with random initialisation (torchvision's for ResNets, timm's
// for the others) from torch's generator. numClasses < 1 or an unknown name -> UsageError.
Model createModel(const std::string& name, const ModelOptions& options);
Model createModel(const std::string& name, int64_t numClasses = 1000);

// Every accepted name (canonical names first, then aliases), family by family.
std::vector<std::string> knownArchitectures();

// Total downsampling of the last feature map: 32 (ImageNet stems), 8 (small-image stem).
int outputStride(const std::string& name);

// Whether `name` is one of fixres's own small demo networks (resnet_tiny, vit_demo,
// convnext_demo), which timm does not have: timm.create_model cannot build them.
bool isFixresOwn(const std::string& name);

// UsageError unless numClasses >= 1 (every family's classifier).
void checkNumClasses(int64_t numClasses);

}  // namespace fixres::models
