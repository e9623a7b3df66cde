// A held-out split carved from a training folder (Holdout.h).
#include "fixres/data/Holdout.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"

namespace fixres::data {
namespace fs = std::filesystem;

namespace {
// SplitMix64 (Steele, Lea and Flood 2014): a fixed sequence from a seed, the same everywhere.
uint64_t splitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<int64_t> holdoutPick(int64_t n, int64_t count, uint64_t seed, int64_t classIndex) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  uint64_t state = seed ^ (0x632BE59BD9B4E019ull * static_cast<uint64_t>(classIndex + 1));
  // The first `count` places of a Fisher-Yates shuffle (Durstenfeld's, from the front).
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = i + static_cast<int64_t>(splitMix64(state) % static_cast<uint64_t>(n - i));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  order.resize(static_cast<size_t>(count));
  return order;
}

HoldoutPlan planHoldout(const std::string& trainRoot, const std::string& holdoutRoot,
                        double fraction, uint64_t seed) {
  FIXRES_CHECK(std::isfinite(fraction) && fraction > 0 && fraction <= 0.5, UsageError,
               "--fraction must be in (0, 0.5], got ", fraction);
  std::error_code ec;
  FIXRES_CHECK(!fs::exists(holdoutRoot, ec), UsageError, holdoutRoot,
               " exists already: a held-out split is carved once (remove it, or move its images "
               "back to ",
               trainRoot, ", to carve another)");
  const auto train = openImageFolder(trainRoot);
  HoldoutPlan plan;
  plan.trainRoot = trainRoot;
  plan.holdoutRoot = holdoutRoot;
  plan.classes = train->classes();
  std::vector<std::vector<size_t>> members(plan.classes.size());
  for (size_t i = 0; i < train->size(); ++i)
    members[static_cast<size_t>(train->label(i))].push_back(i);
  for (size_t c = 0; c < members.size(); ++c) {
    const auto n = static_cast<int64_t>(members[c].size());
    FIXRES_CHECK(n >= 2, DataError, trainRoot, "/", plan.classes[c], " holds ", n,
                 " image: a held-out split needs 2 images of each class (one on each side)");
    const int64_t count =
        std::clamp<int64_t>(std::llround(fraction * static_cast<double>(n)), 1, n - 1);
    for (const int64_t k : holdoutPick(n, count, seed, static_cast<int64_t>(c))) {
      const std::string from = train->name(members[c][static_cast<size_t>(k)]);
      plan.moves.push_back(
          {from, (fs::path(holdoutRoot) / plan.classes[c] / fs::path(from).filename()).string()});
    }
    plan.moved.push_back(count);
    plan.kept.push_back(n - count);
  }
  return plan;
}

int carveHoldout(const HoldoutPlan& plan) {
  size_t done = 0;
  const auto undo = [&plan, &done] {
    std::error_code ec;
    while (done > 0) {
      --done;
      fs::rename(plan.moves[done].to, plan.moves[done].from, ec);
    }
    // Only empty folders go: a file that could not move back stays where it is.
    for (const auto& c : plan.classes) fs::remove(fs::path(plan.holdoutRoot) / c, ec);
    fs::remove(plan.holdoutRoot, ec);
  };
  // The split's folder made here, atomically: a second `fixres holdout` on the same data started
  // since the plan finds it and stops before moving anything.
  {
    std::error_code ec;
    const bool made = fs::create_directory(plan.holdoutRoot, ec);
    FIXRES_CHECK(!ec, OutputError, "cannot create ", plan.holdoutRoot, ": ", ec.message());
    FIXRES_CHECK(made, UsageError, plan.holdoutRoot,
                 " exists already (another fixres holdout on the same data?): a held-out split "
                 "is carved once");
  }
  try {
    for (const auto& c : plan.classes) {
      std::error_code ec;
      fs::create_directories(fs::path(plan.holdoutRoot) / c, ec);
      FIXRES_CHECK(!ec, OutputError, "cannot create ", (fs::path(plan.holdoutRoot) / c).string(),
                   ": ", ec.message());
    }
    for (; done < plan.moves.size(); ++done) {
      if (const int signal = stopSignal(); signal != 0) {
        undo();
        return signal;
      }
      const HoldoutMove& m = plan.moves[done];
      std::error_code ec;
      fs::rename(m.from, m.to, ec);
      FIXRES_CHECK(!ec, OutputError, "cannot move ", m.from, " to ", m.to, ": ", ec.message());
    }
  } catch (...) {
    undo();
    throw;
  }
  return 0;
}

}  // namespace fixres::data
