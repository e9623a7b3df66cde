// RandomErasing's parameter draws follow torchvision's get_params, with our per-sample Rng.
#include "fixres/image/RandomErasing.h"

#include <algorithm>
#include <cmath>

#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"

namespace fixres::image {

EraseBox sampleRandomErasing(int height, int width, double p, Rng& rng) {
  EraseBox box;
  if (!(rng.uniform() < p)) return box;
  const double area = static_cast<double>(height) * width;
  const double logLo = std::log(0.3), logHi = std::log(3.3);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double eraseArea = area * rng.uniform(0.02, 0.33);
    const double aspect = std::exp(rng.uniform(logLo, logHi));
    const int h = roundHalfEven(std::sqrt(eraseArea * aspect));
    const int w = roundHalfEven(std::sqrt(eraseArea / aspect));
    if (!(h < height && w < width)) continue;
    box.apply = true;
    box.height = h;
    box.width = w;
    box.top = static_cast<int>(rng.randint(0, height - h));
    box.left = static_cast<int>(rng.randint(0, width - w));
    return box;
  }
  return box;
}

void eraseChw(float* chw, int height, int width, const EraseBox& box) {
  if (!box.apply) return;
  const size_t plane = size_t(height) * width;
  for (int c = 0; c < 3; ++c) {
    for (int y = box.top; y < box.top + box.height; ++y) {
      float* row = chw + c * plane + size_t(y) * width + box.left;
      std::fill(row, row + box.width, 0.0f);
    }
  }
}

}  // namespace fixres::image
