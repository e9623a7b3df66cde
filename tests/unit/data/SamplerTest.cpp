// Sampler layouts against tests/reference/sampler_cases.py: torch's DistributedSampler itself
// and FixRes's RASampler logic, for several dataset sizes, world sizes, seeds and epochs.
#include "fixres/data/Sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "../Reference.h"
#include "fixres/common/Error.h"

namespace fixres::data {
namespace {

nlohmann::json referenceCases() {
  static const nlohmann::json cases =
      nlohmann::json::parse(fixres::testing::cachedReference("sampler_cases.py", ""));
  return cases;
}

std::shared_ptr<Sampler> makeFor(const nlohmann::json& c, int rank) {
  if (c["kind"] == "distributed") {
    return makeDistributedSampler(c["n"], rank, c["world"], c["shuffle"], c["seed"], c["pad"]);
  }
  return makeRepeatedAugSampler(c["n"], rank, c["world"], c["seed"], c["reps"], c["len_factor"],
                                c["reference_length"]);
}

TEST(DataSampler, LayoutsMatchTheReference) {
  const nlohmann::json cases = referenceCases();
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    const int world = c["world"];
    for (int r = 0; r < world; ++r) {
      auto s = makeFor(c, r);
      s->setEpoch(c["epoch"]);
      const std::vector<int64_t> expected = c["ranks"][r].get<std::vector<int64_t>>();
      EXPECT_EQ(s->indices(), expected) << c.dump().substr(0, 160) << " rank " << r;
      EXPECT_EQ(s->size(), expected.size()) << c.dump().substr(0, 160) << " rank " << r;
    }
  }
}

TEST(DataSampler, RepeatedCopiesLandOnDifferentRanks) {
  for (int world : {3, 4, 8}) {
    const size_t n = 50;
    std::vector<std::vector<int64_t>> pos(world), idx(world);
    for (int r = 0; r < world; ++r) {
      auto s = makeRepeatedAugSampler(n, r, world, 11, 3, 2.0);
      s->setEpoch(2);
      idx[r] = s->indices();
      pos[r] = s->streamPositions();
    }
    // Rebuild the global stream from the ranks' positions; each group of 3 consecutive stream
    // entries is one index, and its 3 positions map to 3 distinct ranks.
    std::map<int64_t, std::pair<int64_t, int>> stream;  // position -> (index, rank)
    for (int r = 0; r < world; ++r) {
      for (size_t k = 0; k < idx[r].size(); ++k) stream[pos[r][k]] = {idx[r][k], r};
    }
    const int64_t length = static_cast<int64_t>(2.0 * n);
    for (int64_t g = 0; g + 2 < length; g += 3) {
      ASSERT_EQ(stream[g].first, stream[g + 1].first);
      ASSERT_EQ(stream[g].first, stream[g + 2].first);
      std::set<int> ranks{stream[g].second, stream[g + 1].second, stream[g + 2].second};
      EXPECT_EQ(ranks.size(), 3u) << "world " << world << " group " << g;
    }
  }
}

TEST(DataSampler, ShardsCoverTheDatasetOnceWithoutPadding) {
  for (int world : {1, 3, 7}) {
    std::multiset<int64_t> seen;
    for (int r = 0; r < world; ++r) {
      auto s = makeDistributedSampler(20, r, world, true, 3, false);
      s->setEpoch(5);
      for (int64_t i : s->indices()) seen.insert(i);
    }
    EXPECT_EQ(seen.size(), 20u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 20u);
  }
}

TEST(DataSampler, EpochChangesTheShuffleAndIsReproducible) {
  auto a = makeDistributedSampler(100, 0, 2, true, 0, true);
  auto b = makeDistributedSampler(100, 0, 2, true, 0, true);
  a->setEpoch(1);
  b->setEpoch(1);
  EXPECT_EQ(a->indices(), b->indices());
  b->setEpoch(2);
  EXPECT_NE(a->indices(), b->indices());
}

TEST(DataSampler, InvalidArgumentsAreUsageErrors) {
  EXPECT_THROW(makeDistributedSampler(10, 2, 2, false, 0, true), UsageError);
  EXPECT_THROW(makeDistributedSampler(10, 0, 0, false, 0, true), UsageError);
  EXPECT_THROW(makeRepeatedAugSampler(10, 0, 1, 0, 0), UsageError);
  EXPECT_THROW(makeDistributedSampler(0, 0, 1, false, 0, true), DataError);
}

}  // namespace
}  // namespace fixres::data
