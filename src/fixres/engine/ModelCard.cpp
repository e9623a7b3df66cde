// Model folders read (run folders, timm hub folders) and the hub config written.
#include "fixres/engine/ModelCard.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/NumberText.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {
namespace {

constexpr uint64_t kMaxConfigBytes = 64 << 20;

nlohmann::json readFolderConfig(const std::string& folder) {
  const std::string path = folder + "/config.json";
  std::string text, why;
  FIXRES_CHECK(tryReadRegularFile(path, kMaxConfigBytes, "model config", &text, &why), WeightsError,
               "--weight-path ", folder,
               " is a folder but not a model folder (a run folder or a timm hub folder): ", why);
  nlohmann::json j;
  FIXRES_CHECK(parseJsonInput(text, &j, &why), WeightsError, path, ": not valid JSON (", why, ")");
  FIXRES_CHECK(j.is_object(), WeightsError, path, ": not a JSON object");
  return j;
}

// A model folder's image size, checked as --input-size checks its value.
int imageSize(int64_t v, const std::string& where) {
  FIXRES_CHECK(kImageSizes.contains(static_cast<double>(v)), WeightsError, where, " must be ",
               kImageSizes.describe(), ", got ", v);
  return static_cast<int>(v);
}

// The side of a timm size field: [3, H, W] (square) or an integer.
int sideOf(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_integer()) return imageSize(v.get<int64_t>(), where);
  FIXRES_CHECK(v.is_array() && v.size() == 3 && v[1].is_number_integer() && v[2] == v[1],
               WeightsError, where, ": expected [3, S, S], got ", jsonExcerpt(v));
  return imageSize(v[1].get<int64_t>(), where);
}

// A model folder's choice (an interpolation, a resize rule), by the flag's names.
template <typename E>
E choiceOf(const nlohmann::json& v, const ChoiceTable<E>& table, const std::string& where) {
  FIXRES_CHECK(v.is_string(), WeightsError, where, ": expected a name, got ", jsonExcerpt(v));
  try {
    return parseChoice(table, v.get<std::string>(), where);
  } catch (const UsageError& e) {
    FIXRES_FAIL(WeightsError, e.what());
  }
}

std::vector<std::string> stringList(const nlohmann::json& v, const std::string& where) {
  FIXRES_CHECK(v.is_array(), WeightsError, where, ": expected a list of names, got ",
               jsonExcerpt(v));
  std::vector<std::string> out;
  for (const auto& e : v) {
    FIXRES_CHECK(e.is_string(), WeightsError, where, ": expected names, got ", jsonExcerpt(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<float> triple(const nlohmann::json& v, const std::string& where) {
  FIXRES_CHECK(
      v.is_array() && v.size() == 3 && v[0].is_number() && v[1].is_number() && v[2].is_number(),
      WeightsError, where, ": expected 3 numbers, got ", jsonExcerpt(v));
  return {v[0].get<float>(), v[1].get<float>(), v[2].get<float>()};
}

// A card of `kind` for `folder` whose weights are `file` in it (WeightsError when missing).
ModelCard folderCard(ModelFolderKind kind, const std::string& folder, const std::string& file,
                     const std::string& why) {
  ModelCard c;
  c.kind = kind;
  c.folder = folder;
  c.weightFile = folder + "/" + file;
  FIXRES_CHECK(fileExists(c.weightFile), WeightsError, folder, " has no ", file, why);
  return c;
}

ModelCard readRunFolder(const std::string& folder, const nlohmann::json& j) {
  ModelCard c = folderCard(ModelFolderKind::kRun, folder, "checkpoint.pth",
                           " (a run folder whose run has not saved a checkpoint yet)");
  RunConfig cfg;
  try {
    cfg = RunConfig::fromJson(j);
    cfg.validateValues();  // the ranges its flags check
  } catch (const UsageError& e) {
    FIXRES_FAIL(WeightsError, folder, "/config.json: ", e.what());
  }
  c.architecture = cfg.model.architectureOrDefault();
  c.efficientNetModel = cfg.model.efficientNetModel;
  c.mean = cfg.model.mean;
  c.std = cfg.model.std;
  c.filter = cfg.model.filter();
  c.resizeMode = cfg.resizeMode;
  const bool finetune = cfg.mode == RunMode::kFinetune;
  c.testSize = finetune ? cfg.inputSize : cfg.evaluationSize();
  c.trainSize = finetune ? c.testSize : cfg.inputSize;
  c.source = cfg.model.weightPath;
  c.trainPath = cfg.trainPath;
  c.license = derivedLicense(cfg.model.weightPath);
  if (j.contains("class_names"))
    c.classNames = stringList(j["class_names"], folder + "/config.json: class_names");
  else if (!cfg.trainPath.empty() && isModelFolder(cfg.trainPath))
    c.classNames = data::declaredClasses(cfg.trainPath);
  c.numClasses =
      cfg.model.numClasses > 0 ? cfg.model.numClasses : static_cast<int64_t>(c.classNames.size());
  return c;
}

ModelCard readHubFolder(const std::string& folder, const nlohmann::json& top) {
  const std::string where = folder + "/config.json";
  // A sweep folder's config.json names the chosen weights (fixres.weights) instead of holding
  // model.safetensors beside it.
  const nlohmann::json* named = nullptr;
  if (top.contains("fixres") && top["fixres"].is_object() && top["fixres"].contains("weights"))
    named = &top["fixres"]["weights"];
  ModelCard c;
  if (named != nullptr) {
    FIXRES_CHECK(named->is_string() && !named->get<std::string>().empty(), WeightsError, where,
                 ": fixres.weights must name the weight file, got ", jsonExcerpt(*named));
    std::string file = named->get<std::string>();
    if (file[0] != '/') file = folder + "/" + file;
    c.kind = ModelFolderKind::kTimmHub;
    c.folder = folder;
    c.weightFile = file;
    FIXRES_CHECK(fileExists(file), WeightsError, where, " names the weight file ", file,
                 ", which is missing");
  } else {
    c = folderCard(ModelFolderKind::kTimmHub, folder, "model.safetensors",
                   " (a timm hub folder: config.json names an architecture)");
  }
  FIXRES_CHECK(top["architecture"].is_string(), WeightsError, where,
               ": architecture must be a name");
  c.architecture = top["architecture"].get<std::string>();
  // timm's older configs are one dict: its fields then stand at the top.
  const nlohmann::json& p = top.contains("pretrained_cfg") ? top["pretrained_cfg"] : top;
  FIXRES_CHECK(p.is_object(), WeightsError, where, ": pretrained_cfg must be an object");
  const auto number = [&](const nlohmann::json& o, const char* key) -> std::optional<int64_t> {
    if (!o.contains(key)) return std::nullopt;
    FIXRES_CHECK(o[key].is_number_integer() && o[key].get<int64_t>() >= 1, WeightsError, where,
                 ": ", key, " must be a positive integer, got ", jsonExcerpt(o[key]));
    return o[key].get<int64_t>();
  };
  if (auto n = number(top, "num_classes"))
    c.numClasses = *n;
  else if (auto m = number(p, "num_classes"))
    c.numClasses = *m;
  if (p.contains("input_size")) c.trainSize = sideOf(p["input_size"], where + ": input_size");
  c.testSize = p.contains("test_input_size")
                   ? sideOf(p["test_input_size"], where + ": test_input_size")
                   : c.trainSize;
  const auto fraction = [&](const char* key, double fallback) {
    if (!p.contains(key)) return fallback;
    FIXRES_CHECK(p[key].is_number() && kCropFractions.contains(p[key].get<double>()), WeightsError,
                 where, ": ", key, " must be in [0.05, 1], got ", jsonExcerpt(p[key]));
    return p[key].get<double>();
  };
  c.cropPct = fraction("crop_pct", 0.875);
  c.testCropPct = fraction("test_crop_pct", c.cropPct);
  if (p.contains("mean")) c.mean = triple(p["mean"], where + ": mean");
  if (p.contains("std")) c.std = triple(p["std"], where + ": std");
  if (p.contains("interpolation"))
    c.filter = choiceOf(p["interpolation"], image::interpolations(), where + ": interpolation");
  // timm resizes the shorter side; fixres's exports say which rule their numbers were made with.
  c.resizeMode = image::ResizeMode::kShorter;
  if (top.contains("fixres") && top["fixres"].contains("resize_mode"))
    c.resizeMode = choiceOf(top["fixres"]["resize_mode"], image::resizeModes(),
                            where + ": fixres.resize_mode");
  if (top.contains("fixres") && top["fixres"].contains("runtime"))
    c.runtime =
        choiceOf(top["fixres"]["runtime"], numericsChoices().runtime, where + ": fixres.runtime");
  if (top.contains("fixres") && top["fixres"].contains("precision"))
    c.precision = choiceOf(top["fixres"]["precision"], numericsChoices().precision,
                           where + ": fixres.precision");
  const nlohmann::json* names = top.contains("label_names") ? &top["label_names"]
                                : p.contains("label_names") ? &p["label_names"]
                                                            : nullptr;
  if (names != nullptr) c.classNames = stringList(*names, where + ": label_names");
  if (p.contains("license") && p["license"].is_string()) c.license = p["license"];
  if (c.numClasses == 0) c.numClasses = static_cast<int64_t>(c.classNames.size());
  return c;
}

}  // namespace

void applyModelCard(const ModelCard& card, ModelSpec& spec) {
  if (!spec.architectureGiven()) {
    spec.architecture = card.architecture;
    spec.efficientNetModel = card.efficientNetModel;
  }
  if (spec.numClasses == 0 && card.numClasses > 0) spec.numClasses = card.numClasses;
  if (!spec.interpolation && card.filter) spec.interpolation = *card.filter;
  if (spec.mean.empty() && card.mean.size() == 3) spec.mean = card.mean;
  if (spec.std.empty() && card.std.size() == 3) spec.std = card.std;
}

bool isModelFolder(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

ModelCard readModelFolder(const std::string& path) {
  const auto j = readFolderConfig(path);
  if (j.contains("mode")) return readRunFolder(path, j);
  if (j.contains("architecture")) return readHubFolder(path, j);
  FIXRES_FAIL(WeightsError, path,
              "/config.json is neither a run's (no \"mode\") nor a timm hub config (no "
              "\"architecture\")");
}

std::vector<std::string> readClassNames(const std::string& path) {
  const std::string text = readRegularFile<DataError>(path, 64 << 20, "class names");
  std::vector<std::string> names;
  size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(start, end - start);
    if (!name.empty() && name.back() == '\r') name.pop_back();
    FIXRES_CHECK(!name.empty(), DataError, "--class-names ", path, ": line ", names.size() + 1,
                 " is blank (one class name per line)");
    names.push_back(name);
    start = end + 1;
  }
  FIXRES_CHECK(!names.empty(), DataError, "--class-names ", path, " is empty");
  return names;
}

Preprocessing ModelCard::test() const {
  Preprocessing p;
  if (testSize > 0) p.sizes = {testSize};
  p.cropPct = testCropPct;
  if (resizeMode) p.resizeMode = *resizeMode;
  if (filter) p.filter = *filter;
  if (mean.size() == 3) std::copy(mean.begin(), mean.end(), p.mean.begin());
  if (std.size() == 3) std::copy(std.begin(), std.end(), p.std.begin());
  return p;
}

ModelCard exportCard(const ModelSpec& spec, const Preprocessing& test, const CardOverrides& o) {
  ModelCard card;
  const models::ArchInfo info = spec.info();
  if (isModelFolder(spec.weightPath)) {
    card = readModelFolder(spec.weightPath);
  } else {
    card.trainSize = info.defaultSize;
    card.source = spec.weightPath;
    card.license = derivedLicense(spec.weightPath);
  }
  card.architecture = info.name;
  card.numClasses = spec.numClasses;
  card.testSize = test.size();
  card.testCropPct = test.cropPct;
  card.resizeMode = test.resizeMode;
  card.filter = test.filter;
  card.mean.assign(test.mean.begin(), test.mean.end());
  card.std.assign(test.std.begin(), test.std.end());
  if (o.trainSize > 0) card.trainSize = o.trainSize;
  if (card.trainSize == 0) card.trainSize = card.testSize;
  if (!o.license.empty()) card.license = o.license;
  if (!o.classNamesFile.empty()) card.classNames = readClassNames(o.classNamesFile);
  FIXRES_CHECK(
      card.classNames.empty() || static_cast<int64_t>(card.classNames.size()) == card.numClasses,
      DataError, o.classNamesFile.empty() ? spec.weightPath : o.classNamesFile, ": ",
      card.classNames.size(), " class names, but the weights have ", card.numClasses, " classes");
  return card;
}

std::string derivedLicense(const std::string& weightPath) {
  return weightPath.find("dl.fbaipublicfiles.com/FixRes") != std::string::npos ? "cc-by-nc-4.0"
                                                                               : "";
}

nlohmann::ordered_json timmHubConfig(const ModelCard& card, models::ModelImpl& model) {
  const auto sd = models::stateDict(model);
  std::string firstConv = sd.begin()->key();
  firstConv = firstConv.substr(0, firstConv.rfind('.'));
  std::string classifier = model.classifierPrefix();
  classifier.pop_back();  // "fc." -> "fc"
  const auto size = [](int s) { return nlohmann::ordered_json::array({3, s, s}); };
  nlohmann::ordered_json p;
  p["tag"] = "fixres";
  p["custom_load"] = false;
  p["input_size"] = size(card.trainSize);
  p["test_input_size"] = size(card.testSize);
  p["fixed_input_size"] = false;
  p["interpolation"] = choiceName(image::interpolations(), card.filter.value());
  p["crop_pct"] = card.cropPct;
  p["test_crop_pct"] = card.testCropPct;
  p["crop_mode"] = "center";
  const auto decimals = [](const std::vector<float>& v) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (float x : v) a.push_back(shortestDouble(x));
    return a;
  };
  p["mean"] = decimals(card.mean);
  p["std"] = decimals(card.std);
  p["num_classes"] = card.numClasses;
  p["first_conv"] = firstConv;
  p["classifier"] = classifier;
  if (!card.license.empty()) p["license"] = card.license;
  nlohmann::ordered_json j;
  j["architecture"] = card.architecture;
  j["num_classes"] = card.numClasses;
  j["num_features"] = model.embeddingDim();
  j["global_pool"] = model.globalPool();
  // A transformer's weights are laid out for one size: timm builds the model at it.
  if (const auto layout = model.layoutImageSize())
    j["model_args"] = {{"img_size", {(*layout)[0], (*layout)[1]}}};
  if (!card.classNames.empty()) j["label_names"] = card.classNames;
  j["pretrained_cfg"] = p;
  j["fixres"] = {{"resize_mode", choiceName(image::resizeModes(), card.resizeMode.value())},
                 {"resize_rule", card.test().resizeRule()},
                 {"test_size", card.testSize},
                 {"source", card.source}};
  return j;
}

}  // namespace fixres::engine
