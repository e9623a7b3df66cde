// `fixres import`: turns an IDX data set (MNIST / Fashion-MNIST) into an image folder of PNGs
// that every subcommand reads: <out>/train/<class>/, <out>/holdout/<class>/ (the last images
// of the training file, for choosing settings without touching the test set) and
// <out>/val/<class>/ (the test file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::data {

struct ImportOptions {
  std::string sourceDir = "/usr/share/datasets/fashion-mnist";
  std::string outDir;                   // --out (the CLI's shared output row)
  std::vector<std::string> classNames;  // folder names in label order (sorted = label order)
  int64_t holdout = 5000;               // last N training images -> holdout/
  int64_t limitTrain = -1;              // first N training images only (-1: all)
  int64_t limitVal = -1;                // first N test images only (-1: all)
  bool numericClasses = false;  // class folders named by label number instead of `classNames`

  // `fixres import`'s own flags, one row each.
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    constexpr Range kCount = Range::integers(0).orValue(-1, "all");
    v(Setting{"",
              "--source",
              "Import",
              "Folder with the IDX files (train-*, t10k-*)",
              {},
              kInvocation,
              "import"},
      o.sourceDir);
    v(Setting{"", "--holdout", "Import", "Last N training images go to holdout/",
              Range::integers(0), kInvocation, "import"},
      o.holdout);
    v(Setting{"", "--limit-train", "Import", "Use only the first N training images (-1: all)",
              kCount, kInvocation, "import"},
      o.limitTrain);
    v(Setting{"", "--limit-val", "Import", "Use only the first N test images (-1: all)", kCount,
              kInvocation, "import"},
      o.limitVal);
    v(Setting{"",
              "--numeric-classes",
              "Import",
              "Name class folders by label number (MNIST) instead of Fashion-MNIST's names",
              {},
              kInvocation,
              "import"},
      o.numericClasses);
  }
};

struct ImportReport {
  int64_t train = 0, holdout = 0, val = 0;
  bool alreadyThere = false;
  int stopSignal = 0;  // SIGINT/SIGTERM came while writing (with handlers installed): nothing kept
};

// Idempotent: a complete earlier import with the same counts is left as it is. Written into a
// temporary folder of its own beside outDir (removed on failure), then moved into place: a new
// outDir appears by one rename, an empty one receives train/, holdout/, val/ and the marker
// file `.fixres-import` (last), and a folder an earlier import made (it holds the marker, whose
// exact text names fixres import and the counts) has those entries replaced, unless it holds
// anything import does not make (refused, naming the first such entry). Anything else at outDir
// (a regular file, a link to nothing, a folder that is not empty without the marker, or with a
// file of that name that fixres did not write) is refused with a UsageError naming it, before
// the source is read; nothing is ever deleted that import did not write. DataError naming the
// missing file and the package to install when the source is absent. With the stop handlers
// installed (common/StopSignal.h), a signal ends the import between two images with nothing
// written (report.stopSignal).
ImportReport importIdx(const ImportOptions& options);

// Fashion-MNIST's ten class names, prefixed so that sorted order is label order.
std::vector<std::string> fashionMnistClassNames();

}  // namespace fixres::data
