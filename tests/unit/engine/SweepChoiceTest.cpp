// The sweep's Pareto front and its choice within a budget, against their definitions:
// - a hand-checked table (accuracy rising with size, speed falling, one size slower and worse);
// - 2,000 random tables (ties included) against a brute force written from the definitions
//   alone: the front is every row no other row dominates, checked pair by pair; the choice is
//   the maximum of (top-1, images/s) over the rows meeting the bounds, the first of equals.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/sweep/Sweep.h"

namespace {

using fixres::engine::chooseWithinBudget;
using fixres::engine::markParetoFront;
using fixres::engine::SweepRow;

SweepRow row(int size, double top1, double ips, double latencyMs, double tunedTop1 = 0) {
  SweepRow r;
  r.size = size;
  r.plain.top1 = top1;
  r.finetuned.top1 = tunedTop1;
  r.imagesPerS = ips;
  r.latencyMs = latencyMs;
  return r;
}

TEST(SweepChoice, HandCheckedTable) {
  // 224 is slower than 192 and no more accurate: dominated. 320 is the most accurate.
  std::vector<SweepRow> rows = {row(160, 70, 1000, 32), row(192, 74, 800, 40),
                                row(224, 74, 700, 45.7), row(256, 76, 500, 64),
                                row(320, 77, 300, 106.7)};
  markParetoFront(rows, false);
  std::vector<bool> front;
  for (const auto& r : rows) front.push_back(r.pareto);
  EXPECT_EQ(front, (std::vector<bool>{true, true, false, true, true}));
  // No budget: the most accurate.
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 0), std::optional<size_t>(4));
  // 50 ms per batch: 160, 192 and 224 qualify; 192 and 224 tie at 74, 192 is faster.
  EXPECT_EQ(chooseWithinBudget(rows, false, 50, 0), std::optional<size_t>(1));
  // 500 img/s: up to 256. Exactly on the bound counts.
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 500), std::optional<size_t>(3));
  EXPECT_EQ(chooseWithinBudget(rows, false, 64, 0), std::optional<size_t>(3));
  // Both bounds: 45.7 ms and 900 img/s leave 160 only.
  EXPECT_EQ(chooseWithinBudget(rows, false, 45.7, 900), std::optional<size_t>(0));
  // Nothing that fast.
  EXPECT_EQ(chooseWithinBudget(rows, false, 10, 0), std::nullopt);
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 2000), std::nullopt);
}

TEST(SweepChoice, FineTunedTopOneDecidesWithFinetune) {
  std::vector<SweepRow> rows = {row(160, 70, 1000, 32, 73), row(224, 75, 700, 45.7, 74)};
  markParetoFront(rows, true);
  EXPECT_TRUE(rows[0].pareto);
  EXPECT_TRUE(rows[1].pareto);
  EXPECT_EQ(chooseWithinBudget(rows, true, 0, 0), std::optional<size_t>(1));
  rows[0].finetuned.top1 = 76;  // now 160 is faster and better once fine-tuned
  markParetoFront(rows, true);
  EXPECT_TRUE(rows[0].pareto);
  EXPECT_FALSE(rows[1].pareto);
  EXPECT_EQ(chooseWithinBudget(rows, true, 0, 0), std::optional<size_t>(0));
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 0), std::optional<size_t>(1));
}

TEST(SweepChoice, RowsWithoutSpeedAreNeverOnTheFrontNorWithinABound) {
  std::vector<SweepRow> rows = {row(160, 70, NAN, NAN), row(224, 75, NAN, NAN)};
  markParetoFront(rows, false);
  EXPECT_FALSE(rows[0].pareto);
  EXPECT_FALSE(rows[1].pareto);
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 0), std::optional<size_t>(1));
  EXPECT_EQ(chooseWithinBudget(rows, false, 1e9, 0), std::nullopt);
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 1e-9), std::nullopt);
}

TEST(SweepChoice, RandomTablesAgreeWithTheDefinitions) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> n(1, 7), level(0, 4);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<SweepRow> rows;
    const int count = n(rng);
    for (int i = 0; i < count; ++i) {
      // Few distinct levels, so that ties in speed, accuracy or both are frequent.
      const double ips = 100.0 * (1 + level(rng));
      rows.push_back(row(64 + 32 * i, 60 + level(rng), ips, 32 * 1000.0 / ips));
    }
    markParetoFront(rows, false);
    for (size_t a = 0; a < rows.size(); ++a) {
      bool dominated = false;
      for (size_t b = 0; b < rows.size(); ++b) {
        if (a == b) continue;
        const bool noWorse =
            rows[b].imagesPerS >= rows[a].imagesPerS && rows[b].plain.top1 >= rows[a].plain.top1;
        const bool better =
            rows[b].imagesPerS > rows[a].imagesPerS || rows[b].plain.top1 > rows[a].plain.top1;
        dominated = dominated || (noWorse && better);
      }
      EXPECT_EQ(rows[a].pareto, !dominated) << "trial " << trial << " row " << a;
    }
    const double maxMs = (trial % 3 == 0) ? 0 : 32 * 1000.0 / (100.0 * (1 + level(rng)));
    const double minIps = (trial % 4 == 0) ? 100.0 * (1 + level(rng)) : 0;
    std::optional<size_t> want;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (maxMs > 0 && rows[i].latencyMs > maxMs) continue;
      if (minIps > 0 && rows[i].imagesPerS < minIps) continue;
      if (!want || std::make_pair(rows[i].plain.top1, rows[i].imagesPerS) >
                       std::make_pair(rows[*want].plain.top1, rows[*want].imagesPerS))
        want = i;
    }
    EXPECT_EQ(chooseWithinBudget(rows, false, maxMs, minIps), want) << "trial " << trial;
  }
}

}  // namespace

namespace {

using fixres::engine::markShiftRule;
using fixres::engine::parseEvalSets;
using fixres::engine::SetScore;
using fixres::engine::SweepOptions;

SetScore setScore(double top1) {
  SetScore s;
  s.top1 = top1;
  s.count = 10;
  return s;
}

// --max-shift-loss: rows losing more than X points on any set against the baseline row are not
// chosen, even when best on the split; a NaN score is never within the rule.
TEST(SweepChoice, ShiftRuleKeepsTheChoiceWithinTheLoss) {
  std::vector<SweepRow> rows = {row(160, 70, 1000, 32), row(224, 74, 700, 45.7),
                                row(320, 78, 300, 106.7), row(384, 79, 200, 150)};
  const double noise[] = {40, 42, 36.5, 37.5}, blur[] = {50, 51, 50, NAN};
  for (size_t i = 0; i < rows.size(); ++i) rows[i].sets = {setScore(noise[i]), setScore(blur[i])};
  SweepOptions o;
  o.evalSets = parseEvalSets({"noise=a", "blur=b"});
  o.maxShiftLoss = 5;
  markShiftRule(rows, 1, o);  // baseline 224: noise 42, blur 51
  std::vector<bool> ok;
  for (const auto& r : rows) ok.push_back(r.shiftOk);
  // 320: noise 36.5 < 42 - 5; 384: blur NaN.
  EXPECT_EQ(ok, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 0), std::optional<size_t>(1));
  o.maxShiftLoss = 5.5;  // 36.5 >= 42 - 5.5: 320 allowed, 384 still not
  markShiftRule(rows, 1, o);
  EXPECT_EQ(chooseWithinBudget(rows, false, 0, 0), std::optional<size_t>(2));
  // The fine-tuned scores decide with --finetune.
  o.finetune = true;
  for (auto& r : rows) r.setsFinetuned = {setScore(0), setScore(0)};
  rows[1].setsFinetuned = {setScore(10), setScore(10)};
  markShiftRule(rows, 1, o);
  for (const auto& r : rows) EXPECT_EQ(r.shiftOk, r.size == 224) << r.size;
}

TEST(SweepChoice, EvalSetEntriesAreNamePathPairs) {
  const auto sets = parseEvalSets({"imagenet-c.noise_3=/data/a=b", "v2=x"});
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].name, "imagenet-c.noise_3");
  EXPECT_EQ(sets[0].path, "/data/a=b");  // the first '=' separates
  for (const char* bad : {"noequals", "=x", "n=", "a b=x", "é=x"})
    EXPECT_THROW(parseEvalSets({bad}), fixres::UsageError) << bad;
  EXPECT_THROW(parseEvalSets({"n=a", "n=b"}), fixres::UsageError);
  EXPECT_THROW(parseEvalSets({std::string(65, 'n') + "=x"}), fixres::UsageError);
}

// --crop-pcts: spaces around an item are the item's, on either side (" 0.9" was taken and "0.9 "
// refused); an empty item is refused.
TEST(SweepChoice, CropListItemsReadAlikeWhateverTheirSpaces) {
  const std::vector<double> want{0.9, 1.0};
  EXPECT_EQ(fixres::engine::parseCropList(" 0.9,1.0"), want);
  EXPECT_EQ(fixres::engine::parseCropList("0.9 ,1.0 "), want);
  EXPECT_EQ(fixres::engine::parseCropList("0.9, 1.0"), want);
  EXPECT_THROW(fixres::engine::parseCropList("0.9, ,1.0"), fixres::UsageError);
  EXPECT_THROW(fixres::engine::parseCropList("0.9 1.0"), fixres::UsageError);
}

}  // namespace
