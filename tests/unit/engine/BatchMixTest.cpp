// Mixup and CutMix against torchvision 0.14's references' RandomMixup / RandomCutmix arithmetic
// for the same drawn lambda and box centre (tests/reference/ema_mix_reference.py mix), bitwise;
// the Beta draws against the Beta distribution's moments; and the loss on soft targets with
// label smoothing against torch.nn.functional.cross_entropy (ema_mix_reference.py ce).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/step/BatchMix.h"
#include "fixres/step/TrainStep.h"
#include "fixres/weights/TorchFile.h"

namespace fixres::engine {
namespace {

c10::impl::GenericDict mixDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

TEST(BatchMixTest, MixupAndCutmixEqualTheReferencesForTheSameDraws) {
  constexpr int64_t kClasses = 7;
  torch::manual_seed(21);
  const auto images = torch::randn({5, 3, 10, 14});
  const auto labels = torch::randint(0, kClasses, {5}, torch::kLong);
  // Both enabled (one of the two per batch), and each alone with a small and a large alpha.
  std::vector<MixDraw> draws;
  const BatchMix both({0.2, 1.0, kClasses});
  const BatchMix mixupOnly({0.4, 0, kClasses});
  const BatchMix cutmixOnly({0, 0.3, kClasses});
  for (int k = 0; k < 8; ++k) {
    auto rng = mixRng(4, 1, k, 0, 0);
    draws.push_back(both.draw(rng, 10, 14));
  }
  for (int k = 0; k < 3; ++k) {
    auto rng = mixRng(4, 2, k, 1, 0);
    draws.push_back(mixupOnly.draw(rng, 10, 14));
    draws.push_back(cutmixOnly.draw(rng, 10, 14));
  }
  int cutmixes = 0;
  auto cases = c10::impl::GenericList(c10::AnyType::get());
  for (const auto& d : draws) {
    auto c = mixDict();
    c.insert("kind", std::string(d.kind == MixKind::kMixup ? "mixup" : "cutmix"));
    c.insert("lambda", d.drawnLambda);
    c.insert("r_x", d.rX);
    c.insert("r_y", d.rY);
    cases.push_back(c);
    cutmixes += d.kind == MixKind::kCutmix;
  }
  EXPECT_GT(cutmixes, 3);  // both kinds are exercised
  EXPECT_LT(cutmixes, static_cast<int>(draws.size()) - 3);
  auto in = mixDict();
  in.insert("images", images);
  in.insert("labels", labels);
  in.insert("num_classes", kClasses);
  in.insert("cases", cases);
  const std::string dir = testing::makeTempDir("fixres_mix_");
  models::writeTorchFile(dir + "/in.pth", in);
  testing::runReference("ema_mix_reference.py", "mix " + dir + "/in.pth " + dir + "/out.pth");
  auto out = models::readTorchFile(dir + "/out.pth").toList();
  ASSERT_EQ(out.size(), draws.size());
  double worst = 0;
  for (size_t k = 0; k < draws.size(); ++k) {
    auto ref = out.get(k).toGenericDict();
    const auto& d = draws[k];
    auto ours = BatchMix::apply(d, images, labels, kClasses);
    // The same from a channels-last batch (the layout the GPU path trains in).
    auto cl =
        BatchMix::apply(d, images.contiguous(torch::MemoryFormat::ChannelsLast), labels, kClasses);
    const auto refImages = ref.at("images").toTensor();
    const auto refTargets = ref.at("targets").toTensor();
    worst = std::max(worst, (ours.images - refImages).abs().max().item<double>());
    worst = std::max(worst, (ours.targets - refTargets).abs().max().item<double>());
    EXPECT_TRUE(torch::equal(ours.images, refImages)) << "case " << k;
    EXPECT_TRUE(torch::equal(ours.targets, refTargets)) << "case " << k;
    EXPECT_TRUE(torch::equal(cl.images, refImages)) << "case " << k << " (channels-last)";
    EXPECT_EQ(d.lambda, ref.at("lambda").toDouble()) << "case " << k;
    if (d.kind == MixKind::kCutmix) {
      const auto box = ref.at("box").toTensor();
      EXPECT_EQ(d.x1, box[0].item<int64_t>());
      EXPECT_EQ(d.y1, box[1].item<int64_t>());
      EXPECT_EQ(d.x2, box[2].item<int64_t>());
      EXPECT_EQ(d.y2, box[3].item<int64_t>());
    }
    EXPECT_LT((ours.targets.sum(1) - 1).abs().max().item<double>(), 1e-6);
  }
  std::cout << "[ mix ] " << draws.size() << " draws (" << cutmixes
            << " CutMix): max abs diff of images and targets against the references " << worst
            << "\n";
}

TEST(BatchMixTest, BetaDrawsHaveTheMomentsOfBetaAlphaAlpha) {
  // Beta(a, a): mean 1/2, variance 1 / (4 (2a + 1)).
  for (double alpha : {0.2, 1.0, 3.0}) {
    auto rng = image::Rng(17);
    constexpr int kDraws = 40000;
    double sum = 0, sumSq = 0, below = 0;
    for (int k = 0; k < kDraws; ++k) {
      const double x = sampleBeta(rng, alpha);
      ASSERT_GE(x, 0);
      ASSERT_LE(x, 1);
      sum += x;
      sumSq += x * x;
      below += x < 0.25;
    }
    const double mean = sum / kDraws;
    const double var = sumSq / kDraws - mean * mean;
    const double expectedVar = 1 / (4 * (2 * alpha + 1));
    std::cout << "[ beta ] alpha " << alpha << ": mean " << mean << " (0.5), variance " << var
              << " (" << expectedVar << ")\n";
    EXPECT_NEAR(mean, 0.5, 0.01);
    EXPECT_NEAR(var / expectedVar, 1, 0.04);
    if (alpha == 1.0) EXPECT_NEAR(below / kDraws, 0.25, 0.01);  // uniform
  }
}

// Beta(a, a) tends to a fair coin on {0, 1} as a -> 0 (P(lambda < 1/2) = 1/2 by symmetry, and
// the mass inside (eps, 1 - eps) vanishes). Both Gamma draws used to underflow to 0 for such a,
// and the sampler retried for ever (--mixup-alpha 1e-300 hung; 1e-11 took seconds a step).
TEST(BatchMixTest, TinyAlphaDrawsAreAFairCoinWithoutRetrying) {
  for (double alpha : {1e-300, 1e-11, 1e-4}) {
    auto rng = image::Rng(5);
    constexpr int kDraws = 20000;
    int below = 0, inside = 0;
    for (int k = 0; k < kDraws; ++k) {
      const double x = sampleBeta(rng, alpha);
      ASSERT_TRUE(std::isfinite(x) && x >= 0 && x <= 1) << alpha << ": " << x;
      below += x < 0.5;
      inside += x > 1e-6 && x < 1 - 1e-6;
    }
    EXPECT_NEAR(static_cast<double>(below) / kDraws, 0.5, 0.015) << alpha;
    // P(1e-6 < lambda < 1 - 1e-6) is about 2 a ln(1e6) for small a: 0 here but for 1e-4 (0.3 %).
    EXPECT_LE(static_cast<double>(inside) / kDraws, alpha < 1e-6 ? 0.0 : 0.01) << alpha;
  }
}

TEST(BatchMixTest, DrawsFollowTheirKeyAndChooseEachKindHalfTheTime) {
  const BatchMix both({0.2, 1.0, 10});
  auto a = mixRng(9, 3, 14, 1, 2), b = mixRng(9, 3, 14, 1, 2);
  const auto da = both.draw(a, 32, 32), db = both.draw(b, 32, 32);
  EXPECT_EQ(da.drawnLambda, db.drawnLambda);
  EXPECT_EQ(da.rX, db.rX);
  int differ = 0;
  const std::vector<std::array<int64_t, 4>> others = {
      {4, 14, 1, 2}, {3, 15, 1, 2}, {3, 14, 0, 2}, {3, 14, 1, 3}};
  for (const auto& [e, s, m, r] : others) {
    auto rng = mixRng(9, e, s, m, r);
    differ += both.draw(rng, 32, 32).drawnLambda != da.drawnLambda;
  }
  EXPECT_EQ(differ, 4);
  int cutmix = 0;
  constexpr int kDraws = 4000;
  for (int k = 0; k < kDraws; ++k) {
    auto rng = mixRng(1, 0, k, 0, 0);
    cutmix += both.draw(rng, 32, 32).kind == MixKind::kCutmix;
  }
  EXPECT_NEAR(static_cast<double>(cutmix) / kDraws, 0.5, 0.03);
}

TEST(BatchMixTest, NegativeAlphaNamesTheFlag) {
  try {
    BatchMix({-1, 0, 10});
    ADD_FAILURE() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--mixup-alpha"), std::string::npos);
  }
  try {
    BatchMix({0, NAN, 10});
    ADD_FAILURE() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--cutmix-alpha"), std::string::npos);
  }
}

TEST(BatchMixTest, SoftTargetLossWithLabelSmoothingEqualsTorchCrossEntropy) {
  constexpr int64_t kClasses = 7;
  torch::manual_seed(8);
  const auto logits = torch::randn({6, kClasses}) * 3;
  const auto labels = torch::randint(0, kClasses, {6}, torch::kLong);
  auto rng = mixRng(2, 0, 0, 0, 0);
  const BatchMix mixer({0.5, 0, kClasses});
  const auto probs = mixer.mix(torch::randn({6, 3, 4, 4}), labels, rng).targets;
  const std::vector<double> smoothing = {0.0, 0.1, 0.3};
  auto in = mixDict();
  in.insert("logits", logits);
  in.insert("probs", probs);
  in.insert("labels", labels);
  in.insert("label_smoothing", c10::List<double>(smoothing));
  const std::string dir = testing::makeTempDir("fixres_ce_");
  models::writeTorchFile(dir + "/in.pth", in);
  testing::runReference("ema_mix_reference.py", "ce " + dir + "/in.pth " + dir + "/out.pth");
  auto out = models::readTorchFile(dir + "/out.pth").toList();
  ASSERT_EQ(out.size(), smoothing.size());
  double worstLoss = 0, worstGrad = 0, worstFormula = 0;
  for (size_t k = 0; k < smoothing.size(); ++k) {
    auto ref = out.get(k).toGenericDict();
    for (const std::string kind : {"soft", "hard"}) {
      auto x = logits.clone().requires_grad_(true);
      auto loss = TrainStep::loss(x, kind == "soft" ? probs : labels, smoothing[k]);
      loss.backward();
      const double dl =
          std::abs(loss.item<double>() - ref.at(kind + "_loss").toTensor().item<double>());
      const double dg = (x.grad() - ref.at(kind + "_grad").toTensor()).abs().max().item<double>();
      worstLoss = std::max(worstLoss, dl);
      worstGrad = std::max(worstGrad, dg);
      // Float32 rounding of a mean of log-softmax terms (losses 2 to 5: an ulp is 2.4e-7 to
      // 4.8e-7) and of softmax - target (below 1): vectorised exp and log differ across CPUs and
      // LibTorch versions in the last digits.
      EXPECT_LE(dl, 1e-6 * std::max(1.0, std::abs(loss.item<double>())))
          << kind << " ls " << smoothing[k];
      EXPECT_LE(dg, 1e-6) << kind << " ls " << smoothing[k];
      if (kind == "soft") {
        const double df =
            std::abs(loss.item<double>() - ref.at("soft_formula").toTensor().item<double>());
        worstFormula = std::max(worstFormula, df);
        EXPECT_LE(df, 1e-5) << "ls " << smoothing[k];
      }
    }
  }
  std::cout << "[ loss ] against torch cross_entropy: max loss diff " << worstLoss
            << ", max gradient diff " << worstGrad
            << "; against the smoothing formula in double: " << worstFormula << "\n";
}

}  // namespace
}  // namespace fixres::engine
