// The registration list: every architecture family fixres builds, in the order its names are
// listed. A new family is its own files plus one line here.
#include "fixres/models/ConvNeXt.h"
#include "fixres/models/EfficientNet.h"
#include "fixres/models/Family.h"
#include "fixres/models/PNASNet.h"
#include "fixres/models/ResNet.h"
#include "fixres/models/VisionTransformer.h"

namespace fixres::models {

const ArchitectureFamily& resnextWslFamily();  // ResNeXtWslFamily.cpp
const ArchitectureFamily& resnetDFamily();     // ResNetDFamily.cpp

const std::vector<const ArchitectureFamily*>& architectureFamilies() {
  static const std::vector<const ArchitectureFamily*> kFamilies = {
      &resnetFamily(), &efficientNetFamily(), &resnextWslFamily(), &pnasnetFamily(),
      &vitFamily(),    &convNeXtFamily(),     &resnetDFamily(),
  };
  return kFamilies;
}

}  // namespace fixres::models
