// `fixres calibrate` as one engine call: the trained weights, the unlabelled images, the test
// resolution; the model is built (its classifier sized by --num-classes or the classes the data
// declares), its BatchNorm statistics re-estimated (Calibrate.h) and the weights written in the
// export layout asked for (Export.h).
#pragma once

#include <cstdint>
#include <string>

#include "fixres/engine/Calibrate.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::engine {

struct CalibrationJob {
  ModelRequest model;       // model.spec.weightPath is required (ModelResolution.h)
  std::string datasetPath;  // any root a dataset reader takes; labels unused
  std::string out;          // the weight file written (atomically)
  int inputSize = 224;      // the test resolution when neither given nor the model folder's
  int64_t maxImages = -1;   // >= 1: a random subset of this many images; -1: every image
  uint64_t seed = 0;        // of the subset, the order and the model's initialisation
  EvalSettings eval;        // batch, workers, resize mode, bad images
  NumericsOptions numerics;
  bool cpu = false;
  ExportLayout layout = ExportLayout::kFixres;

  // Its own rows (the model's, the data's and the evaluation's are shared ones).
  template <typename Self, typename V>
  static void visitSettings(Self& j, V&& v) {
    v(Setting{"", "--max-images", "Data", "Estimate from a random subset of this many images",
              Range::integers(1, 1099511627776.0).orValue(-1, "every image"),
              SettingRole::kInvocation, "calibrate"},
      j.maxImages);
    v(kExportFormatSetting, j.layout, exportLayouts());
  }
};

// UsageError without weights or without a classifier size (the data declares no classes and
// --num-classes is 0); then the errors of buildModel, calibrate and exportWeights.
// The size calibrated at is in the result's `size`.
CalibrationResult runCalibration(const CalibrationJob& job, int* size = nullptr);

}  // namespace fixres::engine
