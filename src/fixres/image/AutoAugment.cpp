// Policies as torchvision 0.14 defines them (autoaugment.py): the same op lists in the same
// order, the same magnitude bins (float32, as torch.linspace computes them), the same sequence of
// random draws; only the generator is ours (per-sample, so results do not depend on threads).
#include "fixres/image/AutoAugment.h"

#include <cmath>
#include <numeric>

#include "fixres/common/Error.h"
#include "fixres/image/AugmentOps.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"

namespace fixres::image {

const ChoiceTable<AutoAugmentKind>& autoAugmentKinds() {
  static const ChoiceTable<AutoAugmentKind> kTable = {
      "auto-augment policy",
      {{"none", AutoAugmentKind::kNone},
       {"ra", AutoAugmentKind::kRandAugment},
       {"ta_wide", AutoAugmentKind::kTrivialAugmentWide},
       {"augmix", AutoAugmentKind::kAugMix},
       {"imagenet", AutoAugmentKind::kImageNet}}};
  return kTable;
}

const std::string& augmentOpName(AugmentOp op) {
  static const std::string kNames[] = {"Identity",     "ShearX",    "ShearY",     "TranslateX",
                                       "TranslateY",   "Rotate",    "Brightness", "Color",
                                       "Contrast",     "Sharpness", "Posterize",  "Solarize",
                                       "AutoContrast", "Equalize",  "Invert"};
  return kNames[static_cast<int>(op)];
}

void validate(const AutoAugmentOptions& o) {
  FIXRES_CHECK(o.raMagnitude >= 0 && o.raMagnitude <= 30, UsageError,
               "--ra-magnitude must be in [0, 30] (31 bins), got ", o.raMagnitude);
  FIXRES_CHECK(o.augmixSeverity >= 1 && o.augmixSeverity <= 10, UsageError,
               "--augmix-severity must be in [1, 10], got ", o.augmixSeverity);
}

std::vector<float> linspaceFloat(double start, double end, int steps) {
  std::vector<float> out(static_cast<size_t>(std::max(steps, 0)));
  if (steps <= 0) return out;
  const float s = static_cast<float>(start), e = static_cast<float>(end);
  if (steps == 1) {
    out[0] = s;
    return out;
  }
  const float step = (e - s) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  int idx = 0;
  // torch's CPU kernel: vectors of 8 in pairs from a base value (separate roundings), then a
  // scalar tail whose multiply-add is fused in torch's AVX2 build.
  for (; idx + 16 <= steps; idx += 8) {
    float base;
    if (idx < halfway) {
      const float off = step * static_cast<float>(idx);
      base = s + off;
    } else {
      const float off = step * static_cast<float>(steps - idx - 1);
      base = e - off;
    }
    for (int i = 0; i < 8; ++i) {
      const float off = step * static_cast<float>(i);
      out[static_cast<size_t>(idx + i)] = base + off;
    }
  }
  for (; idx < steps; ++idx) {
    out[static_cast<size_t>(idx)] = idx < halfway
                                        ? std::fma(step, static_cast<float>(idx), s)
                                        : std::fma(-step, static_cast<float>(steps - idx - 1), e);
  }
  return out;
}

namespace {

using K = AutoAugmentKind;
using Op = AugmentOp;

// 8 - (arange(n) / ((n - 1) / divisor)).round() (or `top` instead of 8), float32 division.
std::vector<float> posterizeBins(int top, int n, double divisor) {
  std::vector<float> out(static_cast<size_t>(n));
  const float d = static_cast<float>((n - 1) / divisor);
  for (int i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] =
        static_cast<float>(top - static_cast<int>(std::nearbyint(static_cast<float>(i) / d)));
  return out;
}

bool isSigned(Op op) {
  switch (op) {
    case Op::kShearX:
    case Op::kShearY:
    case Op::kTranslateX:
    case Op::kTranslateY:
    case Op::kRotate:
    case Op::kBrightness:
    case Op::kColor:
    case Op::kContrast:
    case Op::kSharpness:
      return true;
    default:
      return false;
  }
}

// torch.rand's float32 in [0, 1): 24 random bits.
float uniformFloat(Rng& rng) {
  return static_cast<float>(rng.next() >> 40) * 0x1.0p-24f;
}

struct PolicyEntry {
  Op op;
  double probability;
  int magnitudeBin;  // -1: none
};

// AutoAugmentPolicy.IMAGENET's 25 sub-policies.
const std::vector<std::array<PolicyEntry, 2>>& imagenetPolicy() {
  static const std::vector<std::array<PolicyEntry, 2>> kPolicy = {
      {{{Op::kPosterize, 0.4, 8}, {Op::kRotate, 0.6, 9}}},
      {{{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}}},
      {{{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}}},
      {{{Op::kPosterize, 0.6, 7}, {Op::kPosterize, 0.6, 6}}},
      {{{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}}},
      {{{Op::kEqualize, 0.4, -1}, {Op::kRotate, 0.8, 8}}},
      {{{Op::kSolarize, 0.6, 3}, {Op::kEqualize, 0.6, -1}}},
      {{{Op::kPosterize, 0.8, 5}, {Op::kEqualize, 1.0, -1}}},
      {{{Op::kRotate, 0.2, 3}, {Op::kSolarize, 0.6, 8}}},
      {{{Op::kEqualize, 0.6, -1}, {Op::kPosterize, 0.4, 6}}},
      {{{Op::kRotate, 0.8, 8}, {Op::kColor, 0.4, 0}}},
      {{{Op::kRotate, 0.4, 9}, {Op::kEqualize, 0.6, -1}}},
      {{{Op::kEqualize, 0.0, -1}, {Op::kEqualize, 0.8, -1}}},
      {{{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}}},
      {{{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}}},
      {{{Op::kRotate, 0.8, 8}, {Op::kColor, 1.0, 2}}},
      {{{Op::kColor, 0.8, 8}, {Op::kSolarize, 0.8, 7}}},
      {{{Op::kSharpness, 0.4, 7}, {Op::kInvert, 0.6, -1}}},
      {{{Op::kShearX, 0.6, 5}, {Op::kEqualize, 1.0, -1}}},
      {{{Op::kColor, 0.4, 0}, {Op::kEqualize, 0.6, -1}}},
      {{{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}}},
      {{{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}}},
      {{{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}}},
      {{{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}}},
      {{{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}}},
  };
  return kPolicy;
}

// One op drawn as RandAugment / TrivialAugmentWide / AugMix draw it: the op, the bin (fixed, or
// uniform below `binLimit`), then the sign for signed ops.
AugmentStep drawStep(K kind, int width, int height, int fixedBin, int binLimit, Rng& rng) {
  const auto& ops = policyOps(kind);
  AugmentStep s;
  s.op = ops[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(ops.size()) - 1))];
  const std::vector<float> bins = magnitudeBins(kind, s.op, width, height);
  if (!bins.empty()) {
    const int bin = fixedBin >= 0 ? fixedBin : static_cast<int>(rng.randint(0, binLimit - 1));
    s.magnitude = static_cast<double>(bins[static_cast<size_t>(bin)]);
  }
  if (isSigned(s.op) && rng.coin()) s.magnitude = -s.magnitude;
  return s;
}

// Dirichlet(alpha, ..., alpha) in float32 (torch._sample_dirichlet returns float32).
std::vector<float> sampleDirichlet(Rng& rng, double alpha, int n) {
  std::vector<double> g(static_cast<size_t>(n));
  double sum = 0.0;
  for (auto& v : g) sum += (v = rng.gamma(alpha));
  std::vector<float> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<float>(g[i] / sum);
  return out;
}

constexpr int kAugMixBins = 10;       // AugMix._PARAMETER_MAX
constexpr int kAugMixWidth = 3;       // mixture_width
constexpr double kAugMixAlpha = 1.0;  // alpha

}  // namespace

const std::vector<AugmentOp>& policyOps(AutoAugmentKind kind) {
  static const std::vector<Op> kWide = {
      Op::kIdentity,  Op::kShearX,     Op::kShearY,       Op::kTranslateX, Op::kTranslateY,
      Op::kRotate,    Op::kBrightness, Op::kColor,        Op::kContrast,   Op::kSharpness,
      Op::kPosterize, Op::kSolarize,   Op::kAutoContrast, Op::kEqualize};
  static const std::vector<Op> kAugMix = {
      Op::kShearX,    Op::kShearY,   Op::kTranslateX,   Op::kTranslateY, Op::kRotate,
      Op::kPosterize, Op::kSolarize, Op::kAutoContrast, Op::kEqualize,   Op::kBrightness,
      Op::kColor,     Op::kContrast, Op::kSharpness};
  static const std::vector<Op> kNone;
  switch (kind) {
    case K::kRandAugment:
    case K::kTrivialAugmentWide:
      return kWide;
    case K::kAugMix:
      return kAugMix;
    default:
      return kNone;
  }
}

std::vector<float> magnitudeBins(AutoAugmentKind kind, AugmentOp op, int width, int height) {
  const bool wide = kind == K::kTrivialAugmentWide;
  const bool augmix = kind == K::kAugMix;
  const int n = kind == K::kImageNet || augmix ? kAugMixBins : 31;
  switch (op) {
    case Op::kShearX:
    case Op::kShearY:
      return linspaceFloat(0.0, wide ? 0.99 : 0.3, n);
    case Op::kTranslateX:
      return linspaceFloat(0.0, wide ? 32.0 : (augmix ? width / 3.0 : 150.0 / 331.0 * width), n);
    case Op::kTranslateY:
      return linspaceFloat(0.0, wide ? 32.0 : (augmix ? height / 3.0 : 150.0 / 331.0 * height), n);
    case Op::kRotate:
      return linspaceFloat(0.0, wide ? 135.0 : 30.0, n);
    case Op::kBrightness:
    case Op::kColor:
    case Op::kContrast:
    case Op::kSharpness:
      return linspaceFloat(0.0, wide ? 0.99 : 0.9, n);
    case Op::kPosterize:
      return augmix ? posterizeBins(4, n, 4.0) : posterizeBins(8, n, wide ? 6.0 : 4.0);
    case Op::kSolarize:
      return linspaceFloat(255.0, 0.0, n);
    default:
      return {};
  }
}

AugmentPlan sampleAutoAugment(const AutoAugmentOptions& o, int width, int height, Rng& rng) {
  AugmentPlan plan;
  switch (o.kind) {
    case K::kNone:
      break;
    case K::kRandAugment:
      for (int i = 0; i < 2; ++i)  // num_ops
        plan.steps.push_back(drawStep(o.kind, width, height, o.raMagnitude, 0, rng));
      break;
    case K::kTrivialAugmentWide:
      plan.steps.push_back(drawStep(o.kind, width, height, -1, 31, rng));
      break;
    case K::kImageNet: {
      const auto& policy = imagenetPolicy();
      const auto& sub =
          policy[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(policy.size()) - 1))];
      const float probs[2] = {uniformFloat(rng), uniformFloat(rng)};
      const bool negative[2] = {!rng.coin(), !rng.coin()};  // signs[i] == 0
      for (int i = 0; i < 2; ++i) {
        if (!(static_cast<double>(probs[i]) <= sub[i].probability)) continue;
        AugmentStep s{sub[i].op, 0.0};
        if (sub[i].magnitudeBin >= 0) {
          s.magnitude = magnitudeBins(o.kind, s.op, width, height)[sub[i].magnitudeBin];
          if (isSigned(s.op) && negative[i]) s.magnitude = -s.magnitude;
        }
        plan.steps.push_back(s);
      }
      break;
    }
    case K::kAugMix: {
      plan.augmix = true;
      const std::vector<float> m = sampleDirichlet(rng, kAugMixAlpha, 2);
      plan.originalWeight = m[0];
      plan.chainWeights = sampleDirichlet(rng, kAugMixAlpha, kAugMixWidth);
      for (float& w : plan.chainWeights) w *= m[1];
      for (int i = 0; i < kAugMixWidth; ++i) {
        const int depth = static_cast<int>(rng.randint(1, 3));
        std::vector<AugmentStep> chain;
        for (int k = 0; k < depth; ++k)
          chain.push_back(drawStep(o.kind, width, height, -1, o.augmixSeverity, rng));
        plan.chains.push_back(std::move(chain));
      }
      break;
    }
  }
  return plan;
}

void applyAugmentStep(Image& im, const AugmentStep& s) {
  const double m = s.magnitude;
  const auto factor = static_cast<float>(1.0 + m);
  switch (s.op) {
    case Op::kIdentity:
      break;
    case Op::kShearX:
      im = shearX(im, m);
      break;
    case Op::kShearY:
      im = shearY(im, m);
      break;
    case Op::kTranslateX:
      im = translate(im, static_cast<int>(m), 0);
      break;
    case Op::kTranslateY:
      im = translate(im, 0, static_cast<int>(m));
      break;
    case Op::kRotate:
      im = rotate(im, m);
      break;
    case Op::kBrightness:
      adjustBrightness(im, factor);
      break;
    case Op::kColor:
      adjustSaturation(im, factor);
      break;
    case Op::kContrast:
      adjustContrast(im, factor);
      break;
    case Op::kSharpness:
      adjustSharpness(im, factor);
      break;
    case Op::kPosterize:
      posterize(im, static_cast<int>(m));
      break;
    case Op::kSolarize:
      solarize(im, m);
      break;
    case Op::kAutoContrast:
      autocontrast(im);
      break;
    case Op::kEqualize:
      equalize(im);
      break;
    case Op::kInvert:
      invert(im);
      break;
  }
}

void applyAugmentPlan(Image& im, const AugmentPlan& plan) {
  if (!plan.augmix) {
    for (const auto& s : plan.steps) applyAugmentStep(im, s);
    return;
  }
  // torchvision's AugMix: mix = m0 * image; mix += w_i * chain_i(image); to uint8 (truncation).
  const size_t n = im.pixels.size();
  std::vector<float> mix(n);
  for (size_t i = 0; i < n; ++i) mix[i] = plan.originalWeight * static_cast<float>(im.pixels[i]);
  for (size_t c = 0; c < plan.chains.size(); ++c) {
    Image aug = im;
    for (const auto& s : plan.chains[c]) applyAugmentStep(aug, s);
    const float w = plan.chainWeights[c];
    for (size_t i = 0; i < n; ++i) {
      const float term = w * static_cast<float>(aug.pixels[i]);
      mix[i] += term;
    }
  }
  for (size_t i = 0; i < n; ++i) im.pixels[i] = static_cast<uint8_t>(std::min(mix[i], 255.0f));
}

}  // namespace fixres::image
