// eval's class-order check: a one-sided binomial test at the number of images, not a fixed margin
// (EvalReport.h). The tails are checked against the binomial formula worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fixres/engine/EvalReport.h"

namespace fixres::engine {
namespace {

TEST(ClassOrderCheck, BinomialTailsEqualTheFormula) {
  // P(X <= 0), n = 2, p = 2/3: (1/3)^2.
  EXPECT_NEAR(binomialAtMost(0, 2, 2.0 / 3), 1.0 / 9, 1e-12);
  // P(X <= 3), n = 10, p = 1/2: (1 + 10 + 45 + 120) / 1024.
  EXPECT_NEAR(binomialAtMost(3, 10, 0.5), 176.0 / 1024, 1e-12);
  // P(X <= 1), n = 5, p = 0.1: 0.9^5 + 5 x 0.1 x 0.9^4.
  EXPECT_NEAR(binomialAtMost(1, 5, 0.1), std::pow(0.9, 5) + 0.5 * std::pow(0.9, 4), 1e-12);
  EXPECT_EQ(binomialAtMost(5, 5, 0.3), 1.0);
  EXPECT_EQ(binomialAtMost(-1, 5, 0.3), 0.0);
  // Large n stays finite and in [0, 1]: P(X <= 480) at n = 1000, p = 1/2 is about 0.11.
  const double tail = binomialAtMost(480, 1000, 0.5);
  EXPECT_GT(tail, 0.09);
  EXPECT_LT(tail, 0.13);
}

TEST(ClassOrderCheck, AFewImagesNeverShowIt) {
  // The case that fired before: 2 images of a 3-class model recorded at 100 %, none right.
  // Halfway between chance and the record is 2/3: P(0 of 2) = 1/9, far above the level.
  EXPECT_FALSE(farBelowRecord(0.0, 2, 3, 100.0));
  // 18 images, none right: (1/3)^18, about 2.6e-9.
  EXPECT_TRUE(farBelowRecord(0.0, 18, 3, 100.0));
  // 1000 classes, 50 images, none right, a 76 % record: halfway is 38.05 %, 0.6195^50 = 4e-11.
  EXPECT_TRUE(farBelowRecord(0.0, 50, 1000, 76.0));
  // Near the record: never.
  EXPECT_FALSE(farBelowRecord(70.0, 100000, 1000, 76.0));
  // A record at or below chance says nothing.
  EXPECT_FALSE(farBelowRecord(0.0, 1000, 10, 10.0));
  EXPECT_FALSE(farBelowRecord(0.0, 1000, 1, 100.0));
}

TEST(ClassOrderCheck, TheMappingIsShownWrongOnlyByDifferentNames) {
  const std::vector<std::string> model{"cat", "dog", "fox"};
  EXPECT_FALSE(mappingShownWrong(model, model));
  EXPECT_FALSE(mappingShownWrong({}, model));       // no names recorded: only suspected
  EXPECT_FALSE(mappingShownWrong(model, {"cat"}));  // a folder of the first class alone
  EXPECT_TRUE(mappingShownWrong(model, {"dog"}));   // its index 0 is the model's "cat"
  EXPECT_TRUE(mappingShownWrong(model, {"cat", "fox", "dog"}));
}

}  // namespace
}  // namespace fixres::engine
