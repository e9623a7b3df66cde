// A held-out split carved from a training folder: a seeded share of each class's images moved from
// DATA/train/<class>/ to DATA/<split>/<class>/, so that choices made on it (the sweep's test size,
// crop and precision) are made on images the model was not trained on. Reproducible: the same
// folder, share and seed pick the same files on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::data {

// `fixres holdout`'s request (--imnet-path and --seed are shared rows the command binds).
struct HoldoutRequest {
  std::string imnetPath;
  double fraction = 0.1;
  int64_t seed = 0;

  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    v(Setting{"", "--fraction", "Holdout",
              "The share of each class moved (rounded per class; every class keeps at least "
              "one training image)",
              Range::reals(0, 0.5, /*loOpen=*/true), SettingRole::kInvocation, "holdout"},
      r.fraction);
  }
};

struct HoldoutMove {
  std::string from, to;  // DATA/train/c/f, DATA/<split>/c/f
};

struct HoldoutPlan {
  std::string trainRoot, holdoutRoot;
  std::vector<std::string> classes;
  std::vector<int64_t> kept, moved;  // per class
  std::vector<HoldoutMove> moves;
};

// The images of each class of `trainRoot` that go to `holdoutRoot`: round(fraction x n) of a class
// of n, at least 1 and at most n - 1 (each side needs every class: an image folder with an empty
// class is refused, as torchvision's ImageFolder refuses it), chosen by a Fisher-Yates shuffle of
// the class's sorted file names driven by SplitMix64 from `seed` (no library's shuffle: the
// choice must not depend on the C++ library). UsageError when `holdoutRoot` exists or `fraction`
// is not in (0, 0.5]; DataError when `trainRoot` is not an image folder or a class holds fewer
// than 2 images.
HoldoutPlan planHoldout(const std::string& trainRoot, const std::string& holdoutRoot,
                        double fraction, uint64_t seed);

// The indices of the `count` images of a class of `n` that the plan moves, in the order drawn
// (exposed for the tests' reference).
std::vector<int64_t> holdoutPick(int64_t n, int64_t count, uint64_t seed, int64_t classIndex);

// Moves the plan's files (renames: the same file system). Stops at a stop signal or an error and
// moves back what it had moved, so that the folders end as they began; then the signal number
// (0 when every file moved), or the error rethrown (OutputError naming the file).
int carveHoldout(const HoldoutPlan& plan);

}  // namespace fixres::data
