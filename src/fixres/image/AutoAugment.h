// torchvision 0.14's automatic augmentation policies on RGB uint8 images: RandAugment,
// TrivialAugmentWide, AugMix and the AutoAugment ImageNet policy, with their op lists and
// magnitude bins. Drawing (sampleAutoAugment, from our per-sample Rng) and applying
// (applyAugmentPlan) are separate, so that tests replay the same drawn plan in torchvision.
#pragma once

#include <string>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/image/Image.h"

namespace fixres::image {

class Rng;

enum class AutoAugmentKind { kNone, kRandAugment, kTrivialAugmentWide, kAugMix, kImageNet };
// none, ra, ta_wide, augmix, imagenet (the names of torchvision's references).
const ChoiceTable<AutoAugmentKind>& autoAugmentKinds();

// The operations of torchvision's _apply_op, in the order of their names below.
enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert
};
// torchvision's op name ("ShearX", "AutoContrast", ...).
const std::string& augmentOpName(AugmentOp op);

struct AutoAugmentOptions {
  AutoAugmentKind kind = AutoAugmentKind::kNone;
  int raMagnitude = 9;     // RandAugment magnitude bin, in [0, 30] (31 bins)
  int augmixSeverity = 3;  // AugMix severity, in [1, 10]
};
// UsageError naming --auto-augment / --ra-magnitude / --augmix-severity for a bad value.
void validate(const AutoAugmentOptions& options);

// One op with the magnitude _apply_op receives (sign applied; a float32 bin value as a double).
struct AugmentStep {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0.0;
};

// What one image gets: `steps` in order (RandAugment, TrivialAugmentWide, AutoAugment), or for
// AugMix: `chains` (each applied to the original), mixed in float32 as
// originalWeight * image + sum_i chainWeights[i] * chain_i(image), truncated to uint8.
struct AugmentPlan {
  std::vector<AugmentStep> steps;
  bool augmix = false;
  std::vector<std::vector<AugmentStep>> chains;
  float originalWeight = 1.0f;
  std::vector<float> chainWeights;
};

// Draws the plan for a width x height image, in torchvision's order of draws.
AugmentPlan sampleAutoAugment(const AutoAugmentOptions& options, int width, int height, Rng& rng);
void applyAugmentPlan(Image& im, const AugmentPlan& plan);
void applyAugmentStep(Image& im, const AugmentStep& step);

// torch.linspace(start, end, steps) in float32, value for value (CPU kernel order of operations).
std::vector<float> linspaceFloat(double start, double end, int steps);
// The magnitude bins of `op` in policy `kind` for a width x height image (empty: no magnitude).
std::vector<float> magnitudeBins(AutoAugmentKind kind, AugmentOp op, int width, int height);
// The ops a policy draws from (RandAugment, TrivialAugmentWide, AugMix), in torchvision's order.
const std::vector<AugmentOp>& policyOps(AutoAugmentKind kind);

}  // namespace fixres::image
