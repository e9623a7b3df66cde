// Apparent object size analysis for choosing the test resolution.
#include "fixres/engine/Resolution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "fixres/common/Error.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::engine {
namespace {

ResolutionAnalysis finish(double e, int trainSize, double cropRatio, int multiple) {
  ResolutionAnalysis r;
  r.expectedInvSqrtScale = e;
  r.suggested = cropRatio * e * trainSize;
  const int m = std::max(1, multiple);
  r.suggestedRounded = static_cast<int>(std::lround(r.suggested / m)) * m;
  return r;
}

void checkArgs(int trainSize, double scaleMin, double scaleMax, double cropRatio) {
  FIXRES_CHECK(trainSize > 0, UsageError, "--train-size must be positive, got ", trainSize);
  FIXRES_CHECK(scaleMin > 0 && scaleMin <= scaleMax && scaleMax <= 1, UsageError,
               "RandomResizedCrop scale must satisfy 0 < min <= max <= 1, got [", scaleMin, ", ",
               scaleMax, "]");
  FIXRES_CHECK(cropRatio > 0 && cropRatio <= 1, UsageError, "crop ratio must be in (0, 1], got ",
               cropRatio);
}

}  // namespace

void SuggestRequest::validate() const {
  FIXRES_CHECK(scaleMin <= scaleMax, UsageError, "--scale-min (", scaleMin,
               ") must not exceed --scale-max (", scaleMax, ")");
  imageSides();
}

std::array<int, 2> SuggestRequest::imageSides() const {
  if (imageSize.empty()) return {0, 0};
  int w = 0, h = 0;
  char rest = 0;
  FIXRES_CHECK(std::sscanf(imageSize.c_str(), "%dx%d%c", &w, &h, &rest) == 2 && w >= 1 &&
                   w <= 65535 && h >= 1 && h <= 65535,
               UsageError, "--image-size must be WxH with W and H in [1, 65535], got '", imageSize,
               "'");
  return {w, h};
}

ResolutionAnalysis suggestResolution(int trainSize, double scaleMin, double scaleMax,
                                     double cropRatio, int multiple) {
  checkArgs(trainSize, scaleMin, scaleMax, cropRatio);
  // E[s^-1/2] for s ~ U[a, b] = (1/(b-a)) * 2 (sqrt(b) - sqrt(a)).
  double e = scaleMax > scaleMin
                 ? 2.0 * (std::sqrt(scaleMax) - std::sqrt(scaleMin)) / (scaleMax - scaleMin)
                 : 1.0 / std::sqrt(scaleMin);
  return finish(e, trainSize, cropRatio, multiple);
}

ResolutionAnalysis simulateResolution(int trainSize, int width, int height, double scaleMin,
                                      double scaleMax, double ratioMin, double ratioMax,
                                      double cropRatio, int64_t samples, uint64_t seed,
                                      int multiple) {
  checkArgs(trainSize, scaleMin, scaleMax, cropRatio);
  FIXRES_CHECK(width > 0 && height > 0, UsageError, "image size must be positive");
  FIXRES_CHECK(ratioMin > 0 && ratioMin <= ratioMax, UsageError, "bad aspect ratio range");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uScale(scaleMin, scaleMax);
  std::uniform_real_distribution<double> uLogRatio(std::log(ratioMin), std::log(ratioMax));
  const double area = static_cast<double>(width) * height;  // pixels
  double sum = 0;
  for (int64_t n = 0; n < samples; ++n) {
    double w = -1, h = -1;
    for (int attempt = 0; attempt < 10; ++attempt) {
      double target = area * uScale(rng);
      double ratio = std::exp(uLogRatio(rng));
      double cw = std::nearbyint(std::sqrt(target * ratio));
      double ch = std::nearbyint(std::sqrt(target / ratio));
      if (cw > 0 && cw <= width && ch > 0 && ch <= height) {
        w = cw;
        h = ch;
        break;
      }
    }
    if (w < 0) {  // torchvision's fallback: the whole image, clamped to the ratio range
      double inRatio = static_cast<double>(width) / height;
      if (inRatio < ratioMin) {
        w = width;
        h = std::nearbyint(w / ratioMin);
      } else if (inRatio > ratioMax) {
        h = height;
        w = std::nearbyint(h * ratioMax);
      } else {
        w = width;
        h = height;
      }
    }
    // Train: the crop is resized to K_train x K_train, an object scales by K_train / sqrt(w h)
    // (geometric mean of both axes). Test: the shorter side goes to K_test / cropRatio, scale
    // K_test / (cropRatio min(W, H)). Equal on average when
    // K_test = cropRatio K_train E[min(W, H) / sqrt(w h)]; for a square image that is E[s^-1/2].
    sum += std::min(width, height) / std::sqrt(w * h);
  }
  return finish(sum / samples, trainSize, cropRatio, multiple);
}

std::vector<int> sweepSizes(int trainSize, int stride) {
  FIXRES_CHECK(trainSize >= 1 && stride >= 1, UsageError, "train size and stride must be positive");
  std::vector<int> sizes;
  const auto up = [stride](int v) { return (v + stride - 1) / stride * stride; };
  // Never under the smallest size a command takes (kImageSizes), nor over the largest.
  const int lo = std::max({stride, up(trainSize * 3 / 5), up(static_cast<int>(kImageSizes.lo))});
  for (int v = lo; 5 * v <= 9 * trainSize && v <= kImageSizes.hi; v += stride) sizes.push_back(v);
  if (std::find(sizes.begin(), sizes.end(), trainSize) == sizes.end()) {
    sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), trainSize), trainSize);
  }
  return sizes;
}

}  // namespace fixres::engine
