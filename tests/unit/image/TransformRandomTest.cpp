// Random parameter draws: RandomResizedCrop statistics against torchvision's get_params
// (tests/reference/rrc_stats.py), ColorJitter factor ranges and orders, per-seed determinism,
// and the v2 shifted crop's range.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "../Reference.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"
#include "fixres/image/Transform.h"

namespace fixres::image {
namespace {

TEST(ImageRandom, ResizedCropStatisticsMatchTorchvision) {
  const int draws = 10000;
  const auto ref = nlohmann::json::parse(
      fixres::testing::cachedReference("rrc_stats.py", std::to_string(draws)));
  ASSERT_EQ(ref.size(), 4u);
  Rng rng(2024);
  for (const auto& c : ref) {
    const int w = c["width"], h = c["height"];
    std::map<std::string, std::vector<double>> v;
    for (int k = 0; k < draws; ++k) {
      const Rect r = sampleResizedCrop(w, h, rng);
      ASSERT_GE(r.left, 0);
      ASSERT_GE(r.top, 0);
      ASSERT_LE(r.left + r.width, w);
      ASSERT_LE(r.top + r.height, h);
      v["top"].push_back(r.top);
      v["left"].push_back(r.left);
      v["height"].push_back(r.height);
      v["width"].push_back(r.width);
      v["area"].push_back(double(r.width) * r.height / (double(w) * h));
      v["logratio"].push_back(std::log(double(r.width) / r.height));
    }
    for (const auto& [name, values] : v) {
      double mean = 0, var = 0;
      for (double x : values) mean += x;
      mean /= draws;
      for (double x : values) var += (x - mean) * (x - mean);
      const double sd = std::sqrt(var / draws);
      const double refMean = c["stats"][name][0], refSd = c["stats"][name][1];
      // Means agree within 5 standard errors of the difference; spreads within 6%.
      const double se = std::sqrt(2.0) * std::max(sd, refSd) / std::sqrt(double(draws));
      EXPECT_NEAR(mean, refMean, 5 * se + 1e-9) << w << "x" << h << " " << name;
      EXPECT_NEAR(sd, refSd, 0.06 * refSd + 1e-3) << w << "x" << h << " " << name;
    }
  }
}

TEST(ImageRandom, ColorJitterFactorsAndOrders) {
  Rng rng(1);
  std::set<std::array<int, 4>> orders;
  double sum = 0, lo = 10, hi = -10;
  const int n = 20000;
  for (int k = 0; k < n; ++k) {
    const JitterParams p = sampleColorJitter(rng, 0.3f, 0.3f, 0.3f);
    orders.insert(p.order);
    for (float f : {p.brightness, p.contrast, p.saturation}) {
      sum += f;
      lo = std::min(lo, double(f));
      hi = std::max(hi, double(f));
    }
    EXPECT_FALSE(p.useHue);
  }
  EXPECT_EQ(orders.size(), 24u);  // every permutation occurs
  EXPECT_NEAR(sum / (3 * n), 1.0, 0.005);
  EXPECT_GE(lo, 0.7);
  EXPECT_LT(lo, 0.701);
  EXPECT_LE(hi, 1.3);
  EXPECT_GT(hi, 1.299);
}

Image gradient(int w, int h) {
  Image im(w, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = im.row(y) + x * 3;
      p[0] = uint8_t(x * 255 / w);
      p[1] = uint8_t(y * 255 / h);
      p[2] = uint8_t((x * y) % 251);
    }
  }
  return im;
}

TEST(ImageRandom, TransformsAreAFunctionOfTheSeed) {
  const Image im = gradient(120, 90);
  for (TransformKind kind :
       {TransformKind::kTorch, TransformKind::kFull, TransformKind::kV2Train}) {
    TransformOptions o;
    o.kind = kind;
    o.inputSize = 48;
    Transform t(o);
    EXPECT_TRUE(t.isRandom());
    const auto a = t.apply(im, sampleSeed(1, 2, 3, 4));
    const auto b = t.apply(im, sampleSeed(1, 2, 3, 4));
    EXPECT_EQ(a.image.pixels, b.image.pixels);
    EXPECT_EQ(a.flip, b.flip);
    int differing = 0;
    for (int s = 0; s < 8; ++s) {
      const auto c = t.apply(im, sampleSeed(1, 2, 3, 5 + s));
      differing += (c.image.pixels != a.image.pixels || c.flip != a.flip) ? 1 : 0;
      EXPECT_EQ(c.image.width, 48);
      EXPECT_EQ(c.image.height, 48);
    }
    EXPECT_GE(differing, 7) << transformKindName(kind);
  }
  EXPECT_NE(sampleSeed(1, 2, 3, 4), sampleSeed(1, 2, 4, 3));
}

TEST(ImageRandom, V2ShiftedCropStaysWithinItsRange) {
  // Landscape 120x90 at S=48: resized to 54 high -> 72 x 54; i = 3, j = 12, left in [0, 24].
  TransformOptions o;
  o.kind = TransformKind::kV2Train;
  o.inputSize = 48;
  Transform t(o);
  const Image im = gradient(120, 90);
  std::set<int> lefts;
  for (int s = 0; s < 300; ++s) {
    const auto r = t.apply(im, uint64_t(s));
    ASSERT_EQ(r.image.width, 48);
    // No black column: the crop stays inside the 72-wide image.
    bool blackColumn = true;
    for (int y = 0; y < 48; ++y) blackColumn &= r.image.row(y)[0] == 0 && r.image.row(y)[2] == 0;
    EXPECT_FALSE(blackColumn);
  }
  // Portrait: width int(54 * 90 / 120) = 40 < 48: j = -4, black bars on both sides.
  const Image portrait = gradient(90, 120);
  const auto r = t.apply(portrait, 5);
  for (int y = 0; y < 48; ++y) {
    EXPECT_EQ(r.image.row(y)[0], 0);
    EXPECT_EQ(r.image.row(y)[47 * 3 + 1], 0);
  }
}

TEST(ImageRandom, ResizeSizesFollowTheReference) {
  EXPECT_EQ(valResizeSize(224), 256);
  EXPECT_EQ(valResizeSize(320), 365);
  EXPECT_EQ(valResizeSize(384), 438);
  EXPECT_EQ(valResizeSize(480), 548);
  EXPECT_EQ(fixresResizeSize(375, 500, 256, false), (std::array<int, 2>{192, 256}));
  EXPECT_EQ(fixresResizeSize(500, 375, 256, false), (std::array<int, 2>{341, 256}));
  EXPECT_EQ(fixresResizeSize(500, 375, 224, true), (std::array<int, 2>{224, 168}));
  EXPECT_EQ(shorterSideResizeSize(375, 500, 256), (std::array<int, 2>{256, 341}));
  // A side the reference's int() makes 0 (PIL then refuses the resize) is one pixel.
  EXPECT_EQ(fixresResizeSize(20, 1000, 27, false), (std::array<int, 2>{1, 27}));
  EXPECT_EQ(fixresResizeSize(1000, 20, 24, true), (std::array<int, 2>{24, 1}));
  EXPECT_EQ(shorterSideResizeSize(1000, 4, 24), (std::array<int, 2>{6000, 24}));
}

// An image more than S / 0.875 times taller than wide: the FixRes resize leaves a one-pixel
// column (where the reference's resize fails), centre-cropped with black padding around it.
TEST(ImageRandom, AVeryTallImageIsOneColumnPaddedWithBlack) {
  Image tall(20, 1000);
  for (int y = 0; y < 1000; ++y)
    for (int x = 0; x < 20 * 3; ++x) tall.row(y)[x] = 200;
  for (auto kind : {TransformKind::kVal, TransformKind::kValNoCrop}) {
    TransformOptions o;
    o.kind = kind;
    o.inputSize = 24;
    const auto r = Transform(o).apply(tall, 1);
    int lit = 0;
    for (int x = 0; x < r.image.width; ++x) {
      const uint8_t v = r.image.row(12)[x * 3];
      EXPECT_TRUE(v == 0 || v == 200) << x << ": " << int(v);
      lit += v == 200;
    }
    EXPECT_EQ(lit, 1) << transformKindName(kind);
    EXPECT_EQ(r.image.height, 24);
  }
}

}  // namespace
}  // namespace fixres::image
