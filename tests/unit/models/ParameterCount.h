// Test helper: the parameter count of an architecture. For the ResNet family it is counted from
// the configuration alone (no model built, so IGAM_Resnext101_32x48d's 828M parameters cost
// nothing), so a test comparing it with a built model checks the built layers as well; other
// architectures are built and counted.
#pragma once

#include <cstdint>
#include <string>

#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"

namespace fixres::testing {

// Number of parameters (weights only, no buffers) of the named architecture.
inline int64_t parameterCount(const std::string& name, int64_t numClasses = 1000) {
  using namespace fixres::models;
  if (architectureInfo(name).family != &resnetFamily()) {
    int64_t n = 0;
    for (const auto& p : createModel(name, numClasses)->parameters()) n += p.numel();
    return n;
  }
  ResNetConfig c = resnetConfig(name, numClasses);
  int64_t exp = c.bottleneck ? 4 : 1;
  int64_t stem = c.smallStem ? 3 : 7;
  int64_t n = 3 * c.widths[0] * stem * stem + 2 * c.widths[0];
  int64_t inplanes = c.widths[0];
  for (int s = 0; s < 4; ++s) {
    int64_t planes = c.widths[s];
    int64_t out = planes * exp;
    for (int64_t b = 0; b < c.layers[s]; ++b) {
      int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      if (c.bottleneck) {
        int64_t width = static_cast<int64_t>(planes * (c.widthPerGroup / 64.0)) * c.groups;
        n += inplanes * width + 2 * width;                // conv1, bn1
        n += width * (width / c.groups) * 9 + 2 * width;  // conv2 (grouped), bn2
        n += width * out + 2 * out;                       // conv3, bn3
      } else {
        n += inplanes * planes * 9 + 2 * planes + planes * planes * 9 + 2 * planes;
      }
      if (stride != 1 || inplanes != out) n += inplanes * out + 2 * out;  // downsample
      inplanes = out;
    }
  }
  return n + inplanes * c.numClasses + c.numClasses;
}

}  // namespace fixres::testing
