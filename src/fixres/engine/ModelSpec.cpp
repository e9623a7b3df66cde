// Model construction for every subcommand.
#include "fixres/engine/ModelSpec.h"

#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"

namespace fixres::engine {

image::TransformOptions transformOptions(image::TransformKind kind, int size,
                                         image::ResizeMode resizeMode, const Preprocessing& p) {
  image::TransformOptions t;
  t.kind = kind;
  t.inputSize = size;
  t.resizeMode = resizeMode;
  t.mean = p.mean;
  t.std = p.std;
  t.filter = p.filter;
  return t;
}

BuiltModel buildModel(const ModelSpec& spec, int64_t datasetClasses, const RunDevice& run,
                      uint64_t seed) {
  // Fewer outputs than the dataset has classes: the loss would fail deep in LibTorch.
  FIXRES_CHECK(spec.numClasses == 0 || spec.numClasses >= datasetClasses, UsageError,
               "--num-classes ", spec.numClasses, " is smaller than the ", datasetClasses,
               " classes of the dataset");
  BuiltModel out;
  torch::manual_seed(seed);
  out.model = models::createModel(spec.architecture,
                                  spec.numClasses > 0 ? spec.numClasses : datasetClasses);
  if (!spec.weightPath.empty()) {
    models::LoadOptions lo;
    lo.skipClassifier = spec.skipClassifier;
    out.weights = models::loadWeightsFile(*out.model, spec.weightPath, lo);
  }
  out.model->to(run.device);
  if (run.numerics.channelsLast) useChannelsLast(*out.model);
  return out;
}

}  // namespace fixres::engine
