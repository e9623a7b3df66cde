// --decode-on gpu's transforms against the CPU path (image::Transform, PIL-exact): the same seed
// draws the same crop and flip, and the device's antialiased bilinear resize (torch's, as
// torchvision's tensor transforms) stays within a stated distance of PIL's. Run here on CPU
// tensors: the operations are the ones the GPU runs.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/image/Transform.h"

namespace fixres::data {
namespace {

// A photo-like test image: smooth gradients, a few edges and noise.
image::Image testImage(int w, int h) {
  image::Image im(w, h);
  uint32_t state = 12345;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      state = state * 1664525u + 1013904223u;
      const int noise = static_cast<int>(state >> 27) - 16;
      uint8_t* p = im.row(y) + 3 * x;
      const int edge = ((x / 37) + (y / 23)) % 2 ? 60 : 0;
      p[0] = static_cast<uint8_t>(std::clamp(x * 255 / w + noise + edge, 0, 255));
      p[1] = static_cast<uint8_t>(std::clamp(y * 255 / h - noise, 0, 255));
      p[2] = static_cast<uint8_t>(std::clamp((x + y) * 128 / (w + h) + edge, 0, 255));
    }
  return im;
}

// Largest and mean absolute difference, in uint8 steps, between the device output and the CPU's.
std::pair<double, double> distance(const image::TransformOptions& o, const image::Image& im,
                                   uint64_t seed) {
  const image::Transform cpu(o);
  const auto t = cpu.apply(im, seed);
  std::vector<float> ref(3 * o.inputSize * o.inputSize);
  cpu.writeFloat(t, ref.data());
  const auto want = torch::from_blob(ref.data(), {3, o.inputSize, o.inputSize}).clone();
  const auto got =
      applyDevicePlan(imageToChw(im), planDeviceSample(o, im.width, im.height, seed), o);
  const auto stdv = torch::tensor({o.std[0], o.std[1], o.std[2]}).view({3, 1, 1});
  const auto diff = ((got - want) * stdv * 255).abs();
  return {diff.max().item<double>(), diff.mean().item<double>()};
}

// Measured with LibTorch 1.13 on the CPU: no value more than one uint8 step from PIL's, the mean
// 0.08-0.15 steps (train and val alike). Bounds: one step anywhere (1.5 for float rounding),
// mean 0.25. A wrong crop, size or flip moves the mean by tens of steps.
TEST(DeviceTransformTest, TrainCropsAndFlipsAsTheCpuWithinOneStep) {
  image::TransformOptions o;
  o.kind = image::TransformKind::kTorch;
  o.inputSize = 64;
  const auto im = testImage(320, 240);
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const auto [maxDiff, meanDiff] = distance(o, im, seed);
    EXPECT_LE(maxDiff, 1.5) << "seed " << seed;
    EXPECT_LE(meanDiff, 0.25) << "seed " << seed;
  }
}

TEST(DeviceTransformTest, ValResizesAndCentreCropsAsTheCpuWithinOneStep) {
  image::TransformOptions o;
  o.kind = image::TransformKind::kVal;
  o.inputSize = 96;
  for (auto mode : {image::ResizeMode::kFixres, image::ResizeMode::kShorter})
    for (auto [w, h] : {std::pair{320, 240}, {240, 320}, {97, 131}}) {
      o.resizeMode = mode;
      const auto [maxDiff, meanDiff] = distance(o, testImage(w, h), 0);
      EXPECT_LE(maxDiff, 1.5) << w << "x" << h;
      EXPECT_LE(meanDiff, 0.25) << w << "x" << h;
    }
}

TEST(DeviceTransformTest, AWrongSeedIsFarOff) {
  image::TransformOptions o;
  o.kind = image::TransformKind::kTorch;
  o.inputSize = 64;
  const auto im = testImage(320, 240);
  const image::Transform cpu(o);
  std::vector<float> ref(3 * 64 * 64);
  cpu.writeFloat(cpu.apply(im, 1), ref.data());
  const auto want = torch::from_blob(ref.data(), {3, 64, 64});
  const auto other = applyDevicePlan(imageToChw(im), planDeviceSample(o, 320, 240, 2), o);
  EXPECT_GT(((other - want) * 0.225 * 255).abs().mean().item<double>(), 5.0);
}

TEST(DeviceTransformTest, TransformsWithoutADevicePathAreNamed) {
  image::TransformOptions o;
  EXPECT_EQ(whyNoDevicePath(o), "");
  o.kind = image::TransformKind::kFull;
  EXPECT_NE(whyNoDevicePath(o), "");
  EXPECT_THROW(planDeviceSample(o, 10, 10, 0), UsageError);
  o.kind = image::TransformKind::kTorch;
  o.filter = image::Filter::kBicubic;
  EXPECT_NE(whyNoDevicePath(o).find("bilinear"), std::string::npos);
  o.filter = image::Filter::kBilinear;
  o.randomErase = 0.25;
  EXPECT_NE(whyNoDevicePath(o), "");
}

}  // namespace
}  // namespace fixres::data
