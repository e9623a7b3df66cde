// Model construction for every subcommand.
#include "fixres/engine/ModelSpec.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/OpenVinoModel.h"
#include "fixres/models/Family.h"
#include "fixres/models/Registry.h"
#include "fixres/weights/WeightCache.h"
#include "fixres/weights/WeightSource.h"

namespace fixres::engine {

namespace {

// The state dict of weight file `file`, its tensors read lazily (shapes, no data); none when the
// file holds no dict.
std::optional<c10::impl::GenericDict> lazyStateDict(const std::string& file, bool useEma) {
  auto content = models::openWeightSource(file)->read(/*lazy=*/true);
  if (!content.isGenericDict()) return std::nullopt;
  auto dict = content.toGenericDict();
  for (const char* entry : {useEma ? "model_ema" : "model", "state_dict"}) {
    auto it = dict.find(entry);
    if (it != dict.end() && it->value().isGenericDict()) {
      dict = it->value().toGenericDict();
      break;
    }
  }
  return dict;
}

// The image side the file's entries are laid out for (ArchitectureFamily::fileImageSize), 0
// when none says.
int fileImageSize(models::ModelImpl& model, const std::string& file, bool useEma) {
  const auto size = model.family().fileImageSize;
  if (size == nullptr) return 0;
  const auto dict = lazyStateDict(file, useEma);
  if (!dict) return 0;
  for (const auto& e : *dict) {
    if (!e.key().isString() || !e.value().isTensor()) continue;
    std::string name = e.key().toStringRef();
    if (name.rfind("module.", 0) == 0) name = name.substr(7);
    if (const int side = size(model, name, e.value().toTensor().sizes()); side > 0) return side;
  }
  return 0;
}

}  // namespace

std::string ModelSpec::architectureName() const {
  const std::string architecture = architectureOrDefault();
  if (architecture == "EfficientNet") {
    FIXRES_CHECK(!efficientNetModel.empty(), UsageError,
                 "--architecture EfficientNet needs --EfficientNet-models (e.g. "
                 "tf_efficientnet_b0_ap)");
    return efficientNetModel;
  }
  FIXRES_CHECK(efficientNetModel.empty(), UsageError, "--EfficientNet-models '", efficientNetModel,
               "' is used with --architecture EfficientNet, not '", architecture, "'");
  return architecture;
}

ModelSpec ModelSpec::withDefaults() const {
  ModelSpec s = *this;
  s.architecture = architectureOrDefault();
  s.interpolation = filter();
  return s;
}

ModelSpec ModelSpec::forSizes(const std::vector<int>& sizes, const char* flag) const {
  ModelSpec s = *this;
  const models::ArchInfo a = info();
  for (int size : sizes) {
    FIXRES_CHECK(size <= 0 || size >= a.minInputSize, UsageError, flag, " ", size, ": ", a.name,
                 " takes images of at least ", a.minInputSize,
                 " px (each downsampling needs 2 px or more)");
  }
  if (!sizes.empty()) s.runSize = sizes.front();
  for (int size : sizes)
    if (size != sizes.front()) s.dynamicImgSize = true;
  return s;
}

Preprocessing ModelSpec::preprocessing() const {
  models::ArchInfo a = info();
  Preprocessing p;
  p.mean = a.mean;
  p.std = a.std;
  if (mean.size() == 3) std::copy(mean.begin(), mean.end(), p.mean.begin());
  if (std.size() == 3) std::copy(std.begin(), std.end(), p.std.begin());
  p.filter = filter();
  p.sizes = {runSize > 0 ? runSize : a.testSize};
  p.dynamicSize = dynamicImgSize;
  return p;
}

void ModelSpec::validate() const {
  info();
  FIXRES_CHECK(mean.empty() || mean.size() == 3, UsageError, "--mean takes 3 values (R G B), got ",
               mean.size());
  FIXRES_CHECK(std.empty() || std.size() == 3, UsageError, "--std takes 3 values (R G B), got ",
               std.size());
  for (float v : std)
    FIXRES_CHECK(v > 0 && std::isfinite(v), UsageError, "--std values must be positive, got ", v);
  for (float v : mean)
    FIXRES_CHECK(std::isfinite(v), UsageError, "--mean values must be finite, got ", v);
  FIXRES_CHECK(dropRate < 1, UsageError, "--drop-rate must be below 1, got ", dropRate);
  FIXRES_CHECK(dropPathRate < 1, UsageError, "--drop-path-rate must be below 1, got ",
               dropPathRate);
  if (isRemoteFile(weightPath)) parseRemoteFile(weightPath);
  FIXRES_CHECK(
      !useEma || !weightPath.empty(), UsageError,
      "--use-ema takes the EMA weights of the --weight-path checkpoint: give --weight-path");
}

std::string localWeightFile(const ModelSpec& spec) {
  if (isModelFolder(spec.weightPath)) return readModelFolder(spec.weightPath).weightFile;
  if (!isRemoteFile(spec.weightPath)) return spec.weightPath;
  return models::fetchWeightFile(parseRemoteFile(spec.weightPath), spec.download);
}

BuiltModel buildModel(const ResolvedModel& resolved, int64_t datasetClasses, const RunDevice& run,
                      uint64_t seed) {
  const ModelSpec& spec = resolved.spec;
  // Fewer outputs than the dataset has classes: the loss would fail deep in LibTorch.
  FIXRES_CHECK(spec.numClasses == 0 || spec.numClasses >= datasetClasses, UsageError,
               "--num-classes ", spec.numClasses, " is smaller than the ", datasetClasses,
               " classes of the dataset");
  BuiltModel out;
  spec.validate();
  // Fetched before the model is built: a failed download costs no allocation.
  const std::string weightFile = localWeightFile(spec);
  torch::manual_seed(seed);
  models::ModelOptions mo;
  mo.numClasses = spec.numClasses > 0 ? spec.numClasses : datasetClasses;
  mo.dropRate = spec.dropRate;
  mo.dropPathRate = spec.dropPathRate;
  const int layout = spec.imgSize > 0 ? spec.imgSize : spec.runSize;
  if (layout > 0) mo.imageSize = {layout, layout};
  mo.dynamicImgSize = spec.dynamicImgSize;
  out.model = models::createModel(spec.architectureName(), mo);
  // Fed several sizes without --img-size: laid out as the weights are, so that each size is
  // resampled from their own grid, once (as timm's dynamic_img_size), whatever the order of the
  // sizes or the size an export is made at.
  if (spec.dynamicImgSize && spec.imgSize <= 0 && !weightFile.empty()) {
    const int side = fileImageSize(*out.model, weightFile, spec.useEma);
    if (side > 0 && side != layout) {
      mo.imageSize = {side, side};
      out.model = models::createModel(spec.architectureName(), mo);
    }
  }
  if (!weightFile.empty()) {
    auto lo = models::loadOptionsFor(*out.model, spec.skipClassifier);
    if (spec.useEma) lo.entry = "model_ema";
    try {
      out.weights = models::loadWeightsFile(*out.model, weightFile, lo);
    } catch (const WeightsError& e) {
      if (!isRemoteFile(spec.weightPath)) throw;
      FIXRES_FAIL(WeightsError, oneLine(e.what()), " (", weightFile, " is the cached copy of ",
                  parseRemoteFile(spec.weightPath).url,
                  "; if it is damaged, 'fixres weights fetch --refresh ", spec.weightPath,
                  "' downloads it again)");
    }
  }
  out.model->to(run.device);
  if (run.numerics.channelsLast) useChannelsLast(*out.model);
  if (run.numerics.runtime == Runtime::kOpenVino)
    out.model = openVinoModel(out.model, spec.architectureName(), run.numerics.precision);
  if (!resolved.assumption.empty()) log::info(resolved.assumption);
  return out;
}

}  // namespace fixres::engine

namespace fixres::engine {

int64_t classifierSizeIn(const ModelSpec& spec, std::string* why) {
  const std::string file = localWeightFile(spec);
  if (file.empty()) return 0;
  models::ModelOptions mo;
  mo.numClasses = 1;
  const std::string weight =
      models::createModel(spec.architectureName(), mo)->classifierPrefix() + "weight";
  const auto lazy = lazyStateDict(file, spec.useEma);
  if (!lazy) return 0;
  const auto& dict = *lazy;
  for (const std::string& key : {weight, "module." + weight}) {
    auto it = dict.find(key);
    if (it != dict.end() && it->value().isTensor() && it->value().toTensor().dim() == 2)
      return it->value().toTensor().size(0);
  }
  if (why != nullptr && dict.size() > 0) {
    std::vector<std::string> names;
    for (const auto& e : dict)
      if (e.key().isString()) names.push_back(e.key().toStringRef());
    *why = "it holds no " + weight + " (the classifier of " + spec.architectureName() + ") but " +
           entriesText(names);
  }
  return 0;
}

}  // namespace fixres::engine
