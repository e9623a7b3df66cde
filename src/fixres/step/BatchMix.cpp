// Mixup and CutMix over a batch, with our own deterministic draws.
#include "fixres/step/BatchMix.h"

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// Keeps the mixing draws apart from the per-sample augmentation streams, which key the same
// generator with (seed, epoch, sample index, position).
constexpr uint64_t kMixStream = 0x6D69787570637574ull;  // "mixupcut"

}  // namespace

void MixOptions::validate() const {
  visitSettings(*this, [](const Setting& s, double v) { checkSetting(s, v); });
}

image::Rng mixRng(uint64_t seed, int64_t epoch, int64_t step, int64_t microBatch, int64_t rank) {
  const uint64_t key = image::sampleSeed(seed ^ kMixStream, epoch, step, microBatch);
  return image::Rng(image::sampleSeed(key, rank, 0, 0));
}

double sampleBeta(image::Rng& rng, double alpha) {
  if (alpha >= 1.0) {
    const double x = rng.gamma(alpha);  // both > 0 for shape >= 1 (Marsaglia-Tsang: d v, v > 0)
    const double y = rng.gamma(alpha);
    return x / (x + y);
  }
  // alpha < 1: X = G_x U_x^(1/alpha) with G ~ Gamma(alpha + 1), the draws Rng::gamma makes in the
  // same order. X and Y themselves underflow to 0 for small alpha (both at once below about
  // 1e-3), so lambda = X / (X + Y) = 1 / (1 + Y / X) is taken through log(Y / X), which is always
  // a number: no retry, whatever alpha > 0.
  auto positiveUniform = [&rng] {
    double u = rng.uniform();
    while (u <= 0.0) u = rng.uniform();
    return u;
  };
  const double ux = positiveUniform();
  const double gx = rng.gamma(alpha + 1.0);
  const double uy = positiveUniform();
  const double gy = rng.gamma(alpha + 1.0);
  const double logRatio = std::log(gy / gx) + (std::log(uy) - std::log(ux)) / alpha;
  return 1.0 / (1.0 + std::exp(logRatio));
}

BatchMix::BatchMix(MixOptions options) : o_(options) {
  o_.validate();
}

MixDraw BatchMix::draw(image::Rng& rng, int64_t height, int64_t width) const {
  MixDraw d;
  const bool both = o_.mixupAlpha > 0 && o_.cutmixAlpha > 0;
  d.kind = both ? (rng.coin() ? MixKind::kCutmix : MixKind::kMixup)
                : (o_.cutmixAlpha > 0 ? MixKind::kCutmix : MixKind::kMixup);
  d.drawnLambda = sampleBeta(rng, d.kind == MixKind::kCutmix ? o_.cutmixAlpha : o_.mixupAlpha);
  d.lambda = d.drawnLambda;
  if (d.kind == MixKind::kCutmix) {
    d.rX = rng.randint(0, width - 1);
    d.rY = rng.randint(0, height - 1);
    // CutMix paper, p. 12: a box of sqrt(1 - lambda) of each side, centred at (r_x, r_y),
    // clamped to the image; lambda then follows the box actually pasted.
    const double r = 0.5 * std::sqrt(1.0 - d.drawnLambda);
    const auto halfW = static_cast<int64_t>(r * static_cast<double>(width));
    const auto halfH = static_cast<int64_t>(r * static_cast<double>(height));
    d.x1 = std::max<int64_t>(d.rX - halfW, 0);
    d.y1 = std::max<int64_t>(d.rY - halfH, 0);
    d.x2 = std::min<int64_t>(d.rX + halfW, width);
    d.y2 = std::min<int64_t>(d.rY + halfH, height);
    d.lambda = 1.0 - static_cast<double>((d.x2 - d.x1) * (d.y2 - d.y1)) /
                         static_cast<double>(width * height);
  }
  return d;
}

MixedBatch BatchMix::mix(const torch::Tensor& images, const torch::Tensor& labels,
                         image::Rng& rng) const {
  FIXRES_CHECK(enabled(), InternalError, "BatchMix::mix without --mixup-alpha or --cutmix-alpha");
  return apply(draw(rng, images.size(2), images.size(3)), images, labels, o_.numClasses);
}

MixedBatch BatchMix::apply(const MixDraw& d, const torch::Tensor& images,
                           const torch::Tensor& labels, int64_t numClasses) {
  torch::NoGradGuard noGrad;
  MixedBatch out;
  out.draw = d;
  auto target = torch::one_hot(labels, numClasses).to(images.scalar_type());
  auto targetRolled = target.roll(1, 0);
  auto rolled = images.roll(1, 0);
  if (d.kind == MixKind::kMixup) {
    rolled.mul_(1.0 - d.lambda);
    out.images = images.mul(d.lambda).add_(rolled);
  } else {
    out.images = images.clone();
    auto box = [&](const torch::Tensor& t) { return t.slice(2, d.y1, d.y2).slice(3, d.x1, d.x2); };
    box(out.images).copy_(box(rolled));
  }
  targetRolled.mul_(1.0 - d.lambda);
  out.targets = target.mul_(d.lambda).add_(targetRolled);
  return out;
}

}  // namespace fixres::engine
