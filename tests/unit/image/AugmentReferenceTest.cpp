// The automatic augmentation ops and policies, RandomErasing and their place in the train
// transforms, against torchvision 0.14 on PIL 9.4 (tests/reference/augment_cases.py): our code
// draws the parameters (op, magnitude with its sign, AugMix weights, erase box), the script
// applies torchvision's own functions with those parameters, and the outputs must be equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "../Reference.h"
#include "fixres/image/AugmentOps.h"
#include "fixres/image/AutoAugment.h"
#include "fixres/image/Decode.h"
#include "fixres/image/Ops.h"
#include "fixres/image/RandomErasing.h"
#include "fixres/image/Resample.h"
#include "fixres/image/Rng.h"
#include "fixres/image/Transform.h"

namespace fixres::image {
namespace {

using fixres::testing::readBytes;
using fixres::testing::readFloats;

const AugmentOp kAllOps[] = {AugmentOp::kIdentity,     AugmentOp::kShearX,     AugmentOp::kShearY,
                             AugmentOp::kTranslateX,   AugmentOp::kTranslateY, AugmentOp::kRotate,
                             AugmentOp::kBrightness,   AugmentOp::kColor,      AugmentOp::kContrast,
                             AugmentOp::kSharpness,    AugmentOp::kPosterize,  AugmentOp::kSolarize,
                             AugmentOp::kAutoContrast, AugmentOp::kEqualize,   AugmentOp::kInvert};

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// One batch of cases: inputs written here, the script run once, expected outputs read back.
class Cases {
 public:
  Cases() : dir_(fixres::testing::makeTempDir("fixres_augment_")) {}
  std::string writeImage(const Image& im) {
    const std::string name = "in" + std::to_string(files_++) + ".raw";
    std::ofstream(dir_ + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(im.pixels.data()), std::streamsize(im.pixels.size()));
    return name;
  }
  std::string writeFloats(const std::vector<float>& v) {
    const std::string name = "in" + std::to_string(files_++) + ".f32";
    std::ofstream(dir_ + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
    return name;
  }
  std::string output() { return "out" + std::to_string(files_++) + ".raw"; }
  void add(const std::string& line) { manifest_ << line << "\n"; }
  bool run() {
    std::ofstream(dir_ + "/manifest.txt") << manifest_.str();
    bool ok = false;
    fixres::testing::runReference("augment_cases.py", dir_, &ok);
    return ok;
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
  int files_ = 0;
  std::ostringstream manifest_;
};

std::string imageLine(Cases& cases, const Image& im) {
  return cases.writeImage(im) + " " + std::to_string(im.width) + " " + std::to_string(im.height);
}

std::string stepsText(const std::vector<AugmentStep>& steps) {
  std::string s = std::to_string(steps.size());
  for (const auto& st : steps) s += " " + augmentOpName(st.op) + " " + num(st.magnitude);
  return s;
}

struct Diff {
  size_t differing = 0;
  int worst = 0;
};
Diff compare(const Image& got, const std::vector<uint8_t>& expected) {
  Diff d;
  if (expected.size() != got.pixels.size()) {
    d.differing = SIZE_MAX;
    return d;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const int e = std::abs(int(got.pixels[i]) - int(expected[i]));
    if (e) ++d.differing, d.worst = std::max(d.worst, e);
  }
  return d;
}

class AugmentReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixres::testing::cachedReference("image_cases.py", "{dir}/cases", &imageDir_);
    imageDir_ += "/cases";
  }
  static Image load(const std::string& name) { return decodeFile(imageDir_ + "/" + name); }
  // Real decoded photographs: a 224 x 224 train crop (square: 90-degree rotations become
  // transposes), odd and tiny sizes, landscape and portrait.
  static std::vector<Image> images() {
    std::vector<Image> out;
    out.push_back(resize(ImageView(load("land.jpg")), 224, 224));
    out.push_back(load("odd.jpg"));
    out.push_back(load("tiny.jpg"));
    out.push_back(load("port.jpg"));
    return out;
  }
  static std::string imageDir_;
};
std::string AugmentReference::imageDir_;

TEST_F(AugmentReference, EveryOpIsPixelExactWithTorchvisionOnPil) {
  Cases cases;
  struct Expect {
    Image got;
    std::string out, what;
  };
  std::vector<Expect> expects;
  for (const Image& im : images()) {
    const std::string in = imageLine(cases, im);
    for (AugmentOp op : kAllOps) {
      // The magnitudes the policies use: TrivialAugmentWide's and RandAugment's bins (AugMix's
      // lie inside them) with both signs, every posterize width.
      std::vector<double> mags;
      for (AutoAugmentKind kind : {AutoAugmentKind::kTrivialAugmentWide,
                                   AutoAugmentKind::kRandAugment, AutoAugmentKind::kAugMix}) {
        const auto bins = magnitudeBins(kind, op, im.width, im.height);
        for (size_t b = 0; b < bins.size(); ++b) {
          const bool pick = op == AugmentOp::kPosterize || b % 7 == 3 || b + 1 == bins.size() ||
                            (op == AugmentOp::kRotate && b == 20);  // 90 degrees in ta_wide
          if (!pick || kind == AutoAugmentKind::kAugMix) continue;
          mags.push_back(bins[b]);
          if (op != AugmentOp::kPosterize && op != AugmentOp::kSolarize) mags.push_back(-bins[b]);
        }
      }
      if (mags.empty()) mags.push_back(0.0);
      for (double m : mags) {
        Image got = im;
        applyAugmentStep(got, AugmentStep{op, m});
        const std::string out = cases.output();
        cases.add("op " + in + " " + augmentOpName(op) + " " + num(m) + " " + out);
        expects.push_back({std::move(got), out,
                           augmentOpName(op) + " " + num(m) + " on " + std::to_string(im.width) +
                               "x" + std::to_string(im.height)});
      }
    }
  }
  ASSERT_TRUE(cases.run());
  size_t exact = 0;
  for (const auto& e : expects) {
    const Diff d = compare(e.got, readBytes(cases.path(e.out)));
    EXPECT_EQ(d.differing, 0u) << e.what << ": " << d.differing << " bytes differ, max " << d.worst;
    exact += d.differing == 0;
  }
  std::cout << "[ ops     ] " << exact << " of " << expects.size()
            << " op outputs byte-identical to torchvision/PIL\n";
  EXPECT_GE(expects.size(), 200u);
}

TEST_F(AugmentReference, PoliciesApplyTheirDrawnOpsAsTorchvision) {
  Cases cases;
  struct Expect {
    Image got;
    std::string out, what;
  };
  std::vector<Expect> expects;
  std::map<std::string, int> opsSeen;
  const auto ims = images();
  for (AutoAugmentKind kind : {AutoAugmentKind::kRandAugment, AutoAugmentKind::kTrivialAugmentWide,
                               AutoAugmentKind::kImageNet}) {
    for (size_t k = 0; k < 3; ++k) {
      const Image& im = ims[k];
      const std::string in = imageLine(cases, im);
      for (uint64_t seed = 0; seed < 30; ++seed) {
        AutoAugmentOptions o;
        o.kind = kind;
        o.raMagnitude = static_cast<int>(seed % 31);  // every magnitude over the seeds
        Rng rng(seed * 7919 + k);
        const AugmentPlan plan = sampleAutoAugment(o, im.width, im.height, rng);
        for (const auto& s : plan.steps) ++opsSeen[augmentOpName(s.op)];
        Image got = im;
        applyAugmentPlan(got, plan);
        const std::string out = cases.output();
        cases.add("plan " + in + " " + out + " " + stepsText(plan.steps));
        expects.push_back({std::move(got), out,
                           choiceName(autoAugmentKinds(), kind) + " seed " + std::to_string(seed) +
                               " plan " + stepsText(plan.steps)});
      }
    }
  }
  ASSERT_TRUE(cases.run());
  for (const auto& e : expects) {
    const Diff d = compare(e.got, readBytes(cases.path(e.out)));
    EXPECT_EQ(d.differing, 0u) << e.what << ": " << d.differing << " bytes differ, max " << d.worst;
  }
  EXPECT_GE(opsSeen.size(), 14u);  // the draws reach (nearly) every op
}

TEST_F(AugmentReference, AugMixMixesLikeTorchvision) {
  Cases cases;
  struct Expect {
    Image got;
    std::string out, outNearest, outBilinear;
  };
  std::vector<Expect> expects;
  const auto ims = images();
  for (size_t k = 0; k < 3; ++k) {
    const Image& im = ims[k];
    const std::string in = imageLine(cases, im);
    for (uint64_t seed = 0; seed < 15; ++seed) {
      AutoAugmentOptions o;
      o.kind = AutoAugmentKind::kAugMix;
      o.augmixSeverity = 1 + static_cast<int>(seed % 10);
      Rng rng(seed + 100 * k);
      const AugmentPlan plan = sampleAutoAugment(o, im.width, im.height, rng);
      ASSERT_EQ(plan.chains.size(), 3u);
      Image got = im;
      applyAugmentPlan(got, plan);
      Expect e{std::move(got), cases.output(), cases.output(), cases.output()};
      std::string line = "augmix " + in + " " + e.out + " " + e.outNearest + " " + e.outBilinear +
                         " " + num(plan.originalWeight);
      for (float w : plan.chainWeights) line += " " + num(w);
      for (const auto& chain : plan.chains) line += " " + stepsText(chain);
      cases.add(line);
      expects.push_back(std::move(e));
    }
  }
  ASSERT_TRUE(cases.run());
  // Exact: torchvision's AugMix mixing (float32, truncation) over chains applied as its PIL ops.
  for (const auto& e : expects) {
    const Diff d = compare(e.got, readBytes(cases.path(e.out)));
    EXPECT_EQ(d.differing, 0u) << d.differing << " bytes differ, max " << d.worst;
  }
  // Measured: torchvision's AugMix itself runs the chains on uint8 tensors, whose colour ops
  // round differently from PIL's (and, by default, resample the geometry bilinearly).
  for (int bilinear = 0; bilinear < 2; ++bilinear) {
    size_t total = 0, differing = 0, within1 = 0;
    int worst = 0;
    for (const auto& e : expects) {
      const auto ref = readBytes(cases.path(bilinear ? e.outBilinear : e.outNearest));
      ASSERT_EQ(ref.size(), e.got.pixels.size());
      for (size_t i = 0; i < ref.size(); ++i) {
        const int d = std::abs(int(e.got.pixels[i]) - int(ref[i]));
        total++, differing += d != 0, within1 += d <= 1, worst = std::max(worst, d);
      }
    }
    std::printf(
        "[ augmix  ] vs torchvision's tensor path (%s geometry): %.2f%% of values differ, "
        "%.2f%% within 1/255, max %d/255\n",
        bilinear ? "bilinear" : "nearest", 100.0 * differing / total, 100.0 * within1 / total,
        worst);
  }
}

TEST_F(AugmentReference, MagnitudeBinsAndOpListsAreTorchvisions) {
  Cases cases;
  const int sizes[][2] = {{224, 224}, {333, 251}, {37, 23}, {500, 375}};
  for (const auto& s : sizes)
    cases.add("bins " + std::to_string(s[0]) + " " + std::to_string(s[1]));
  ASSERT_TRUE(cases.run());
  std::ifstream in(cases.path("bins.txt"));
  std::string line;
  int lists = 0, binTables = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag, kindName, name;
    int w, h;
    ls >> tag >> kindName >> w >> h;
    const AutoAugmentKind kind = parseChoice(autoAugmentKinds(), kindName, "test");
    if (tag == "ops") {
      std::vector<std::string> names;
      while (ls >> name) names.push_back(name);
      if (kind == AutoAugmentKind::kImageNet) continue;  // AutoAugment picks sub-policies
      std::vector<std::string> ours;
      for (AugmentOp op : policyOps(kind)) ours.push_back(augmentOpName(op));
      EXPECT_EQ(ours, names) << kindName;
      ++lists;
      continue;
    }
    int isSignedOp, n;
    ls >> name >> isSignedOp >> n;
    std::vector<float> expected(static_cast<size_t>(n));
    for (auto& v : expected) ls >> v;
    AugmentOp op = AugmentOp::kIdentity;
    for (AugmentOp o : kAllOps)
      if (augmentOpName(o) == name) op = o;
    EXPECT_EQ(augmentOpName(op), name);
    const auto ours = magnitudeBins(kind, op, w, h);
    ASSERT_EQ(ours.size(), expected.size()) << kindName << " " << name;
    // torch.linspace: equal to the last bit in torch 1.13; torch 2.x's float32 kernel (the upper
    // half counted down from the end) is up to one float32 step off (docs/pytorch2.md).
    for (size_t i = 0; i < ours.size(); ++i)
      EXPECT_LE(std::abs(ours[i] - expected[i]),
                2 * std::numeric_limits<float>::epsilon() * std::abs(expected[i]))
          << kindName << " " << name << " " << w << "x" << h << " bin " << i << ": " << ours[i]
          << " vs " << expected[i];
    ++binTables;
  }
  EXPECT_EQ(lists, 3 * 4);
  EXPECT_GE(binTables, 4 * 40);
}

TEST_F(AugmentReference, RandomErasingFillsTorchvisionsBox) {
  Cases cases;
  struct Expect {
    std::vector<float> got;
    std::string out;
  };
  std::vector<Expect> expects;
  const std::vector<uint8_t> bytes = readBytes(imageDir_ + "/odd.jpg");
  int erased = 0;
  for (int size : {64, 37}) {
    TransformOptions o;
    o.kind = TransformKind::kTorch;
    o.inputSize = size;
    o.randomErase = 0.7;
    const Transform t(o);
    for (uint64_t seed = 0; seed < 12; ++seed) {
      TransformedImage r = t.apply(bytes.data(), bytes.size(), "odd.jpg", seed);
      const EraseBox box = r.erase;
      std::vector<float> got(3 * size_t(size) * size), plain(got.size());
      t.writeFloat(r, got.data());
      r.erase = EraseBox{};
      t.writeFloat(r, plain.data());
      if (!box.apply) {
        EXPECT_EQ(got, plain);
        continue;
      }
      ++erased;
      EXPECT_TRUE(box.height < size && box.width < size && box.top + box.height <= size &&
                  box.left + box.width <= size);
      const std::string out = cases.output();
      cases.add("erase " + cases.writeFloats(plain) + " " + std::to_string(size) + " " +
                std::to_string(size) + " " + std::to_string(box.top) + " " +
                std::to_string(box.left) + " " + std::to_string(box.height) + " " +
                std::to_string(box.width) + " " + out);
      expects.push_back({std::move(got), out});
    }
  }
  ASSERT_TRUE(cases.run());
  for (const auto& e : expects) EXPECT_EQ(e.got, readFloats(cases.path(e.out)));
  EXPECT_GE(erased, 8);
}

// RandomErasing's area, aspect and coin follow torchvision's get_params distribution: the mean
// erased fraction of a 224 x 224 image with p = 1 (the sqrt/round geometry makes it close to the
// mean of U(0.02, 0.33), 0.175).
TEST(RandomErasing, DrawsFollowTorchvisionsDistribution) {
  Rng rng(42);
  double sum = 0;
  int applied = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const EraseBox b = sampleRandomErasing(224, 224, 1.0, rng);
    if (!b.apply) continue;
    ++applied;
    sum += double(b.height) * b.width / (224.0 * 224.0);
  }
  EXPECT_GT(applied, n * 99 / 100);
  EXPECT_NEAR(sum / applied, 0.175, 0.01);
  int coin = 0;
  for (int i = 0; i < n; ++i) coin += sampleRandomErasing(224, 224, 0.25, rng).apply;
  EXPECT_NEAR(double(coin) / n, 0.25, 0.015);
}

// The policy sees the image torchvision's ClassificationPresetTrain gives it: cropped, flipped
// and (full) colour-jittered; our deferred flip and per-value map are applied first.
TEST_F(AugmentReference, TrainTransformAugmentsTheFlippedJitteredCrop) {
  Cases cases;
  struct Expect {
    Image got;
    std::string out, what;
  };
  std::vector<Expect> expects;
  const std::vector<uint8_t> bytes = readBytes(imageDir_ + "/land.jpg");
  const Image decoded = load("land.jpg");
  for (TransformKind kind : {TransformKind::kTorch, TransformKind::kFull}) {
    for (AutoAugmentKind aa : {AutoAugmentKind::kTrivialAugmentWide, AutoAugmentKind::kRandAugment,
                               AutoAugmentKind::kImageNet}) {
      TransformOptions plainOptions;
      plainOptions.kind = kind;
      plainOptions.inputSize = 96;
      TransformOptions o = plainOptions;
      o.autoAugment = aa;
      const Transform plain(plainOptions), augmented(o);
      for (uint64_t seed = 0; seed < 8; ++seed) {
        // The image before the policy, as torchvision's PIL image: HWC, flipped and jittered.
        std::vector<uint8_t> chw(3 * 96 * 96);
        plain.writeUint8(plain.apply(bytes.data(), bytes.size(), "land.jpg", seed), chw.data());
        Image before(96, 96);
        for (int c = 0; c < 3; ++c)
          for (size_t i = 0; i < 96 * 96; ++i) before.pixels[i * 3 + c] = chw[c * 96 * 96 + i];
        // The plan: the same generator, replayed past the crop, flip and jitter draws.
        Rng rng(seed);
        sampleResizedCrop(decoded.width, decoded.height, rng);
        rng.uniform();
        if (kind == TransformKind::kFull) sampleColorJitter(rng, 0.3f, 0.3f, 0.3f, 0.0f);
        const AugmentPlan plan = sampleAutoAugment(AutoAugmentOptions{aa, 9, 3}, 96, 96, rng);
        std::vector<uint8_t> outChw(chw.size());
        augmented.writeUint8(augmented.apply(bytes.data(), bytes.size(), "land.jpg", seed),
                             outChw.data());
        Image got(96, 96);
        for (int c = 0; c < 3; ++c)
          for (size_t i = 0; i < 96 * 96; ++i) got.pixels[i * 3 + c] = outChw[c * 96 * 96 + i];
        const std::string out = cases.output();
        cases.add("plan " + imageLine(cases, before) + " " + out + " " + stepsText(plan.steps));
        expects.push_back({std::move(got), out,
                           transformKindName(kind) + " " + choiceName(autoAugmentKinds(), aa) +
                               " seed " + std::to_string(seed)});
      }
    }
  }
  ASSERT_TRUE(cases.run());
  for (const auto& e : expects) {
    const Diff d = compare(e.got, readBytes(cases.path(e.out)));
    EXPECT_EQ(d.differing, 0u) << e.what << ": " << d.differing << " bytes differ, max " << d.worst;
  }
}

TEST(AutoAugmentOptions, BadValuesNameTheirFlag) {
  auto message = [](const TransformOptions& o) {
    try {
      Transform t(o);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TransformOptions o;
  o.kind = TransformKind::kFull;
  o.autoAugment = AutoAugmentKind::kRandAugment;
  o.raMagnitude = 31;
  EXPECT_NE(message(o).find("--ra-magnitude"), std::string::npos);
  o.raMagnitude = 9;
  o.autoAugment = AutoAugmentKind::kAugMix;
  o.augmixSeverity = 0;
  EXPECT_NE(message(o).find("--augmix-severity"), std::string::npos);
  o.augmixSeverity = 3;
  o.randomErase = 1.5;
  EXPECT_NE(message(o).find("--random-erase"), std::string::npos);
  o.randomErase = 0.0;
  o.kind = TransformKind::kVal;
  EXPECT_NE(message(o).find("--auto-augment augmix needs a train transform"), std::string::npos);
  EXPECT_THROW(parseChoice(autoAugmentKinds(), "randaugment", "--auto-augment"), UsageError);
  EXPECT_EQ(parseChoice(autoAugmentKinds(), "ta_wide", "--auto-augment"),
            AutoAugmentKind::kTrivialAugmentWide);
}

}  // namespace
}  // namespace fixres::image
