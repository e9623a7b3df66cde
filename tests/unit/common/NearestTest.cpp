// nameDistance against the textbook values of the optimal-string-alignment distance, and the
// nearest names a mistyped flag or architecture is offered.
#include <gtest/gtest.h>

#include "fixres/common/Nearest.h"

namespace fixres {
namespace {

TEST(Nearest, DistanceIsTheOptimalStringAlignmentOne) {
  EXPECT_EQ(nameDistance("kitten", "sitting"), 3u);  // 2 substitutions, 1 insertion
  EXPECT_EQ(nameDistance("flaw", "lawn"), 2u);
  EXPECT_EQ(nameDistance("", "abc"), 3u);
  EXPECT_EQ(nameDistance("abc", ""), 3u);
  EXPECT_EQ(nameDistance("ab", "ba"), 1u);   // a swap of neighbours is one edit
  EXPECT_EQ(nameDistance("ca", "abc"), 3u);  // OSA, not Damerau: no edit of a swapped pair
  EXPECT_EQ(nameDistance("same", "same"), 0u);
}

TEST(Nearest, CaseAndUnderscoresAreSpellings) {
  EXPECT_EQ(nameDistance("--learning_rate", "--learning-rate"), 0u);
  EXPECT_EQ(nameDistance("ResNet50", "resnet50"), 0u);
  EXPECT_EQ(nameDistance("resnet_tny", "resnet_tiny"), 1u);
}

TEST(Nearest, NearestFirstWithinTheBound) {
  const std::vector<std::string> names{"--lr-schedule", "--learning-rate", "--label-smoothing",
                                       "--batch", "--learning-rate"};
  EXPECT_EQ(nearestNames("--learning_rate", names, 3, 3),
            (std::vector<std::string>{"--learning-rate"}));
  EXPECT_EQ(nearestNames("--bach", names, 1), (std::vector<std::string>{"--batch"}));
  EXPECT_TRUE(nearestNames("--zzzzzzzz", names, 3, 2).empty());
  EXPECT_EQ(nearestNames("x", names, 2).size(), 2u);  // unbounded: the count
  EXPECT_EQ(orList({"a", "b", "c"}), "a, b or c");
  EXPECT_EQ(orList({"a"}), "a");
}

}  // namespace
}  // namespace fixres
