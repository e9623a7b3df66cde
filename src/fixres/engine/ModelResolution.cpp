// resolveModel: the model folder read once, the sizes and names decided in one place.
#include "fixres/engine/ModelResolution.h"

#include <sstream>
#include <stdexcept>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/common/NumberText.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {

std::vector<int> parseSizeList(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trimmed(item);  // "224, 288" and "224 ,288" alike
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::logic_error&) {
      FIXRES_FAIL(UsageError, flag, " must be a comma-separated list of sizes, got '", text, "'");
    }
    FIXRES_CHECK(used == item.size() && kImageSizes.contains(v), UsageError, flag,
                 " values must be ", kImageSizes.describe(), ", got '", item, "'");
    out.push_back(v);
  }
  FIXRES_CHECK(!out.empty(), UsageError, flag, " is empty");
  FIXRES_CHECK(text.back() != ',', UsageError, flag,
               " must be a comma-separated list of sizes, got '", text, "'");
  return out;
}

namespace {
// "224" or "224,288"
std::string joinSizes(const std::vector<int>& sizes) {
  std::string s;
  for (int v : sizes) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}
}  // namespace

NumericsOptions ResolvedModel::numerics(NumericsRequest given, bool onCpu) const {
  if (!card || (!card->runtime && !card->precision)) return given.options();
  const auto& c = numericsChoices();
  std::string used;
  if (card->precision && !given.precision) {
    given.precision = *card->precision;
    used = "precision " + choiceName(c.precision, *given.precision);
  }
  if (card->runtime && !given.runtime && *card->runtime != given.options().runtime) {
    const Precision p =
        given.precision == PrecisionChoice::kBf16 ? Precision::kBf16 : Precision::kFp32;
    std::string why;
    if (*card->runtime == RuntimeChoice::kOpenVino) {
      why = !onCpu               ? "the model runs on CUDA"
            : !openVinoBuiltIn() ? "this build has no OpenVINO"
            : !openVinoSupports(p)
                ? "this CPU has no " + std::string(precisionName(p)) + " in OpenVINO"
                : "";
    }
    if (why.empty()) {
      given.runtime = *card->runtime;
      used = "runtime " + choiceName(c.runtime, *given.runtime) + (used.empty() ? "" : ", ") + used;
    } else {
      log::warn(card->folder, " was chosen in ", choiceName(c.runtime, *card->runtime), ", but ",
                why, ": LibTorch runs it (--runtime to choose)");
    }
  }
  if (!used.empty())
    log::info("running ", card->folder, "'s model in its recorded ", used,
              " (--runtime, --precision to choose another)");
  return given.options();
}

int64_t ResolvedModel::classCount(std::string* why) const {
  if (spec.numClasses > 0) return spec.numClasses;
  if (const int64_t inFile = classifierSizeIn(spec, why); inFile > 0) return inFile;
  return static_cast<int64_t>(classNames.size());
}

EvalOptions ResolvedModel::evalOptions(const EvalSettings& settings, int size, const RunDevice& run,
                                       uint64_t seed) const {
  EvalOptions o = engine::evalOptions(settings, size, input, run, seed);
  o.modelSource = spec.weightPath;
  return o;
}

ResolvedModel resolveModel(const ModelRequest& request, const std::vector<int>& defaultSizes) {
  ResolvedModel m;
  if (isModelFolder(request.spec.weightPath)) m.card = readModelFolder(request.spec.weightPath);
  std::vector<int> sizes = request.sizes;
  if (sizes.empty() && m.card && m.card->testSize > 0) sizes = {m.card->testSize};
  if (sizes.empty()) sizes = defaultSizes;
  if (sizes.empty()) sizes = {request.spec.info().testSize};
  m.spec = request.spec.forSizes(sizes);
  m.input = m.spec.preprocessing();
  m.input.sizes = sizes;
  m.input.resizeMode = request.resizeMode             ? *request.resizeMode
                       : m.card && m.card->resizeMode ? *m.card->resizeMode
                                                      : image::ResizeMode::kFixres;
  m.input.cropPct = request.cropPct ? *request.cropPct
                    : m.card        ? m.card->testCropPct
                                    : kFixresCropPct;
  if (!request.classNamesFile.empty())
    m.classNames = readClassNames(request.classNamesFile);
  else if (m.card)
    m.classNames = m.card->classNames;
  // A bare weight file records no preprocessing: without --input-size, what is assumed and where
  // it comes from is said (by buildModel, once the weights load: a model trained at 24 px would
  // otherwise run at 224 without a word).
  if (!m.card && !request.spec.weightPath.empty() && request.sizes.empty()) {
    const Preprocessing& p = m.input;
    m.assumption = detail::concat(
        request.spec.weightPath, " records no preprocessing (a weight file, not a model folder): ",
        m.spec.architectureOrDefault(), " at ", joinSizes(p.sizes), " px (the default), crop ",
        p.cropPct, request.cropPct ? "" : " (FixRes's)", ", mean ", p.mean[0], ",", p.mean[1], ",",
        p.mean[2], " std ", p.std[0], ",", p.std[1], ",", p.std[2],
        "; --input-size, --crop-pct, --mean and --std choose them");
  }
  return m;
}

ResolvedModel resolvedFor(const ModelSpec& spec, const Preprocessing& input) {
  ResolvedModel m;
  m.spec = spec.forSizes(input.sizes);
  if (input.dynamicSize) m.spec.dynamicImgSize = true;
  m.input = input;
  m.input.dynamicSize = m.spec.dynamicImgSize;
  return m;
}

ResolvedModel resolvedForSizes(const ModelSpec& spec, const std::vector<int>& sizes) {
  Preprocessing input = spec.preprocessing();
  input.sizes = sizes;
  return resolvedFor(spec, input);
}

}  // namespace fixres::engine
