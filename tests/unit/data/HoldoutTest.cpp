// fixres holdout's carving when the data changes between the plan and the moves: a second copy
// that made the split's folder in the meantime stops this one before any image moves.
#include "fixres/data/Holdout.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../Reference.h"
#include "fixres/common/Error.h"

namespace fixres::data {
namespace {
namespace fs = std::filesystem;

TEST(Holdout, ASplitMadeSinceThePlanStopsTheCarveBeforeAnyMove) {
  const std::string root = testing::makeTempDir("fixres-holdout-");
  for (const char* c : {"a", "b"}) {
    fs::create_directories(fs::path(root) / "train" / c);
    for (int i = 0; i < 4; ++i)
      std::ofstream(fs::path(root) / "train" / c / (std::to_string(i) + ".png")) << "x";
  }
  const HoldoutPlan plan = planHoldout(root + "/train", root + "/holdout", 0.5, 0);
  ASSERT_EQ(plan.moves.size(), 4u);         // 2 of 4 in each class
  fs::create_directory(root + "/holdout");  // another fixres holdout, started meanwhile
  EXPECT_THROW(carveHoldout(plan), UsageError);
  for (const HoldoutMove& m : plan.moves) EXPECT_TRUE(fs::exists(m.from)) << m.from;
  EXPECT_TRUE(fs::is_empty(root + "/holdout"));
}

}  // namespace
}  // namespace fixres::data
