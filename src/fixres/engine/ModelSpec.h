// What a run's model is: architecture, classifier size, starting weights and the preprocessing
// its weights expect. Bound directly by the CLI (--architecture, --num-classes, --weight-path,
// --skip-classifier) and turned into a model on a device by buildModel, the one place models
// are built for train, finetune, eval, extract and sweep.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fixres/common/Download.h"
#include "fixres/engine/Numerics.h"
#include "fixres/image/Transform.h"
#include "fixres/models/Model.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {

// The normalisation and resampling filter the weights were trained with.
struct Preprocessing {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  image::Filter filter = image::Filter::kBilinear;  // the reference's resize filter
};

struct ModelSpec {
  std::string architecture = "ResNet50";  // any name of models::knownArchitectures()
  std::string efficientNetModel;  // with architecture "EfficientNet" (the reference's spelling)
  int64_t numClasses = 0;         // 0: the number of classes of the dataset
  // Empty: random initialisation (seeded). A local file, or an http(s) URL (optionally
  // "URL#sha256=HEX") fetched into download.cacheDir first (common/Download.h).
  std::string weightPath;
  bool skipClassifier = false;  // load every weight but the classifier
  // Load the file's EMA weights (a checkpoint's "model_ema", --use-ema) instead of its "model".
  bool useEma = false;
  // Preprocessing overrides: empty mean/std: the architecture's (ImageNet's; 0.5 for PNASNet).
  std::vector<float> mean, std;
  image::Filter interpolation = image::Filter::kBilinear;  // the reference's resize filter
  // Dropout and drop-path rates in training (< 0: the architecture's default).
  double dropRate = -1, dropPathRate = -1;
  // Where and how a weightPath URL is fetched (--cache-dir, --download-timeout); not a setting
  // of the run (config.json does not record it).
  DownloadOptions download;

  // The registry name: efficientNetModel for "EfficientNet", else architecture. UsageError when
  // --EfficientNet-models is missing or given with another architecture.
  std::string architectureName() const;
  models::ArchInfo info() const { return models::architectureInfo(architectureName()); }
  // The normalisation and filter of this model's inputs.
  Preprocessing preprocessing() const;
  // UsageError naming the flag for an unknown architecture, bad overrides or a malformed
  // "#sha256=" part of a weight URL.
  void validate() const;
};

// The transform `kind` at `size` with the model's preprocessing.
image::TransformOptions transformOptions(image::TransformKind kind, int size,
                                         image::ResizeMode resizeMode,
                                         const Preprocessing& preprocessing);

// The file buildModel loads: spec.weightPath, or for an http(s) URL its copy in the cache,
// fetched first when missing (WeightsError for a failed download, OutputError for a cache that
// cannot be written). "" when spec.weightPath is empty.
std::string localWeightFile(const ModelSpec& spec);

struct BuiltModel {
  models::Model model{nullptr};
  models::LoadReport weights;  // loaded == 0 when no weight file was given
};

// Builds spec.architecture with spec.numClasses outputs (or `datasetClasses`), initialised from
// torch's generator seeded with `seed` (the same weights on every rank), loads spec.weightPath
// when given (localWeightFile: a URL is fetched before the model is built; WeightsError on a bad
// file), moves it to run.device and converts it to channels-last when run.numerics say so.
BuiltModel buildModel(const ModelSpec& spec, int64_t datasetClasses, const RunDevice& run,
                      uint64_t seed = 0);

}  // namespace fixres::engine
