// Batch-level mixup and CutMix, as torchvision 0.14's classification references apply them
// (RandomMixup, RandomCutmix with p = 1; both given: one of the two per batch, each with
// probability 1/2, as their RandomChoice): the batch is mixed with itself rolled by one along the
// batch dimension, the one-hot targets likewise. The random draws come from our own generator,
// seeded from (seed, epoch, step, micro-batch, rank), so a run is reproducible and resumes
// bitwise.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "fixres/common/Setting.h"
#include "fixres/image/Rng.h"

namespace fixres::engine {

struct MixOptions {
  double mixupAlpha = 0;   // --mixup-alpha: > 0 enables mixup, lambda ~ Beta(alpha, alpha)
  double cutmixAlpha = 0;  // --cutmix-alpha: > 0 enables CutMix
  int64_t numClasses = 0;  // the one-hot width (the model's outputs)

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    v(Setting{"mixup_alpha", "--mixup-alpha", "Optimisation",
              "Mixup with lambda ~ Beta(alpha, alpha) on every batch (0: off; with --cutmix-alpha "
              "one of the two per batch)",
              Range::reals(0)},
      o.mixupAlpha);
    v(Setting{"cutmix_alpha", "--cutmix-alpha", "Optimisation",
              "CutMix with lambda ~ Beta(alpha, alpha) on every batch (0: off; with --mixup-alpha "
              "one of the two per batch)",
              Range::reals(0)},
      o.cutmixAlpha);
  }

  bool enabled() const { return mixupAlpha > 0 || cutmixAlpha > 0; }
  // UsageError naming --mixup-alpha / --cutmix-alpha for a negative or non-finite value.
  void validate() const;
};

enum class MixKind { kMixup, kCutmix };

// One batch's draws and what follows from them.
struct MixDraw {
  MixKind kind = MixKind::kMixup;
  double drawnLambda = 1;  // the Beta(alpha, alpha) draw
  // CutMix: the box centre (r_x uniform in [0, W), r_y in [0, H)) and the box [x1, x2) x [y1, y2)
  // pasted from the rolled batch, clamped to the image.
  int64_t rX = 0, rY = 0;
  int64_t x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  double lambda = 1;  // the weight of the batch itself: drawnLambda, or 1 - box area / image area
};

// What the step trains on.
struct MixedBatch {
  torch::Tensor images;   // float N x 3 x H x W, same device and layout as the input
  torch::Tensor targets;  // float N x numClasses, rows sum to 1
  MixDraw draw;
};

// The generator of one micro-batch's draws.
image::Rng mixRng(uint64_t seed, int64_t epoch, int64_t step, int64_t microBatch, int64_t rank);

// lambda ~ Beta(alpha, alpha), drawn as X / (X + Y) with X, Y ~ Gamma(alpha, 1) (as a Dirichlet
// draw over two categories).
double sampleBeta(image::Rng& rng, double alpha);

class BatchMix {
 public:
  explicit BatchMix(MixOptions options);  // validates

  bool enabled() const { return o_.enabled(); }
  // The draws for an image of height x width, in the references' order: the choice (when both
  // are enabled), lambda, then r_x and r_y (CutMix).
  MixDraw draw(image::Rng& rng, int64_t height, int64_t width) const;
  // images float N x 3 x H x W, labels int64 N (in [0, numClasses)) -> the mixed batch.
  MixedBatch mix(const torch::Tensor& images, const torch::Tensor& labels, image::Rng& rng) const;
  // Applies given draws: the references' arithmetic (their in-place multiply-adds, in float32).
  static MixedBatch apply(const MixDraw& draw, const torch::Tensor& images,
                          const torch::Tensor& labels, int64_t numClasses);

 private:
  MixOptions o_;
};

}  // namespace fixres::engine
