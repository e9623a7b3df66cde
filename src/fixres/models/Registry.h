// Model registry: architecture names (FixRes's and torchvision's) -> models.
#pragma once

#include <string>
#include <vector>

#include "fixres/models/ResNet.h"

namespace fixres::models {

// Builds an architecture by name, with `numClasses` outputs and torchvision's random
// initialisation. Names are case-sensitive: torchvision names (resnet50, resnext101_32x8d, ...),
// FixRes names (ResNet50, IGAM_Resnext101_32x48d) and resnet_tiny (see docs/models.md).
// Unknown name or numClasses < 1 -> UsageError listing the known names.
ResNet createModel(const std::string& name, int64_t numClasses = 1000);

// The configuration createModel(name) uses (UsageError for an unknown name).
ResNetConfig modelConfig(const std::string& name, int64_t numClasses = 1000);

// Every accepted name (canonical torchvision-style names first, then aliases).
std::vector<std::string> knownArchitectures();

// Number of parameters (weights only, no buffers) of the named architecture, from its shapes
// without building it.
int64_t parameterCount(const std::string& name, int64_t numClasses = 1000);
// Total downsampling of the last feature map: 32 (torchvision stem), 8 (small-image stem).
int outputStride(const std::string& name);

}  // namespace fixres::models
