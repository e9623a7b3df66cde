// Validation and JSON form of a run's configuration.
#include "fixres/engine/RunConfig.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <type_traits>

#include "fixres/common/Error.h"
#include "fixres/common/JsonInput.h"

namespace fixres::engine {
namespace {

struct JsonWriter {
  nlohmann::json& out;
  template <typename T>
  void operator()(const Setting& s, const T& value) {
    if (s.saved()) out[s.key] = value;
  }
  template <typename T>
  void operator()(const Setting& s, const std::optional<T>& value) {
    if (s.saved()) out[s.key] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }
  template <typename E>
  void operator()(const Setting& s, const E& value, const ChoiceTable<E>& table) {
    if (s.saved()) out[s.key] = choiceName(table, value);
  }
  template <typename E>
  void operator()(const Setting& s, const std::optional<E>& value, const ChoiceTable<E>& table) {
    if (s.saved())
      out[s.key] = value ? nlohmann::json(choiceName(table, *value)) : nlohmann::json(nullptr);
  }
};

// Keys that are absent (or null) leave the field as it is.
struct JsonReader {
  const nlohmann::json& in;
  template <typename T>
  void operator()(const Setting& s, T& out) {
    if (s.saved()) read(s.key, out);
  }
  template <typename E>
  void operator()(const Setting& s, E& out, const ChoiceTable<E>& table) {
    if (s.saved()) read(s.key, out, table);
  }
  template <typename E>
  void operator()(const Setting& s, std::optional<E>& out, const ChoiceTable<E>& table) {
    if (!s.saved() || !in.contains(s.key) || in.at(s.key).is_null()) return;
    E value{};
    read(s.key, value, table);
    out = value;
  }
  template <typename T>
  void read(const char* key, T& out) {
    if (!in.contains(key) || in.at(key).is_null()) return;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // An integer field takes a number that is an integer of its type's range (a float such as
      // 4e68 converted unchecked is undefined; 4294967320 would wrap to 24).
      const nlohmann::json& v = in.at(key);
      const double lo = static_cast<double>(std::numeric_limits<T>::min());
      const double end = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;  // 2^bits
      bool fits = false;
      if (v.is_number_unsigned())
        fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      else if (v.is_number_integer())
        fits = v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
               v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
      else if (v.is_number_float())
        fits = std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
               v.get<double>() >= lo && v.get<double>() < end;
      FIXRES_CHECK(fits || !v.is_number(), UsageError, "config: '", key,
                   "' must be an integer of at most ", std::numeric_limits<T>::digits,
                   " bits, got ", jsonExcerpt(v));
      if (v.is_number_float()) {
        out = static_cast<T>(v.get<double>());
        return;
      }
    }
    try {
      out = in.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      FIXRES_FAIL(UsageError, "config: '", key, "' has the wrong type (", jsonExcerpt(in.at(key)),
                  ")");
    }
  }
  template <typename T>
  void read(const char* key, std::optional<T>& out) {
    if (!in.contains(key) || in.at(key).is_null()) return;
    T value{};
    read(key, value);
    out = value;
  }
  template <typename E>
  void read(const char* key, E& out, const ChoiceTable<E>& table) {
    std::string name;
    read(key, name);
    if (!name.empty()) out = parseChoice(table, name, std::string("config: '") + key + "'");
  }
};

// Each numeric value against its row's range (UsageError naming the flag).
struct RangeChecker {
  template <typename T>
  void operator()(const Setting& s, const T& value) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      checkSetting(s, static_cast<double>(value));
  }
  template <typename T>
  void operator()(const Setting& s, const std::optional<T>& value) {
    if (value) (*this)(s, *value);
  }
  template <typename T, typename E>
  void operator()(const Setting&, const T&, const ChoiceTable<E>&) {}
};

// The role of each saved key.
struct Roles {
  std::map<std::string, SettingRole> byKey;
  template <typename T>
  void operator()(const Setting& s, const T&) {
    if (s.saved()) byKey[s.key] = s.role;
  }
  template <typename T, typename E>
  void operator()(const Setting& s, const T& t, const ChoiceTable<E>&) {
    (*this)(s, t);
  }
};

}  // namespace

const ChoiceTable<NanPolicy>& nanPolicies() {
  static const ChoiceTable<NanPolicy> kTable = {
      "NaN policy", {{"stop", NanPolicy::kStop}, {"skip", NanPolicy::kSkip}}};
  return kTable;
}

const ChoiceTable<RunMode>& runModes() {
  static const ChoiceTable<RunMode> kTable = {
      "run mode", {{"train", RunMode::kTrain}, {"finetune", RunMode::kFinetune}}};
  return kTable;
}

std::vector<ConfigChange> resumeChanges(const nlohmann::json& stored, const RunConfig& now) {
  const nlohmann::json before = RunConfig::fromJson(stored).toJson();
  const nlohmann::json after = now.toJson();
  Roles roles;
  RunConfig::visitSettings(now, roles);
  std::vector<ConfigChange> out;
  for (const auto& [key, value] : after.items()) {
    const SettingRole role = roles.byKey.at(key);
    if (!stored.contains(key) || role == SettingRole::kNotCompared || before.at(key) == value)
      continue;
    bool definesRun = role == SettingRole::kDefinesRun;
    // The shard sampler is the data's (its reader requires it): the config of a run started
    // before the reader said so holds the --sampler that such data never used. Noted only.
    if (key == "sampler" && now.sampler == data::SamplerKind::kShard) definesRun = false;
    out.push_back({key, jsonExcerpt(before.at(key)), jsonExcerpt(value), definesRun});
  }
  return out;
}

std::string runFolder(const std::string& shared, RunMode mode, const std::string& jobId) {
  return (shared.empty() ? std::string("runs") : shared) + "/" + choiceName(runModes(), mode) +
         "/" + jobId;
}

RunConfig RunConfig::forMode(RunMode mode) {
  RunConfig c;
  c.mode = mode;
  if (mode == RunMode::kFinetune) {
    c.inputSize = 384;
    c.epochs = 56;
    c.learningRate = 1e-3;
    c.trainTransform = image::TransformKind::kVal;
    c.sampler = data::SamplerKind::kDistributed;
  }
  return c;
}

void RunConfig::validateValues() const {
  visitSettings(*this, RangeChecker{});
  FIXRES_CHECK(!step.nesterov || (step.optimizer->nesterov && step.momentum > 0), UsageError,
               "--nesterov needs --opt sgd or lars and --momentum > 0");
  progressive.validate(epochs);
  FIXRES_CHECK(!progressive.enabled() || mode == RunMode::kTrain, UsageError,
               "--min-res/--max-res (progressive resizing) are for train, not finetune");
  image::validate(image::AutoAugmentOptions{autoAugment, raMagnitude, augmixSeverity});
  const bool trainTransformKind = trainTransform == image::TransformKind::kTorch ||
                                  trainTransform == image::TransformKind::kFull ||
                                  trainTransform == image::TransformKind::kV2Train;
  FIXRES_CHECK(trainTransformKind || autoAugment == image::AutoAugmentKind::kNone, UsageError,
               "--auto-augment ", choiceName(image::autoAugmentKinds(), autoAugment),
               " needs --transform torch, full or v2-train, got ",
               image::transformKindName(trainTransform));
  FIXRES_CHECK(trainTransformKind || randomErase == 0.0, UsageError, "--random-erase ", randomErase,
               " needs --transform torch, full or v2-train, got ",
               image::transformKindName(trainTransform));
  model.validate();
  checkLearningRate(1);
}

double RunConfig::effectiveLearningRate(int processes) const {
  // The reference's linear scaling counts the images of one optimizer step.
  return absoluteLr ? learningRate
                    : fixresScaledLr(learningRate, batch * accumulationSteps, processes);
}

void RunConfig::checkLearningRate(int processes) const {
  const double start = effectiveLearningRate(processes);
  double peak = start;
  if (schedule.kind == ScheduleKind::kStep && schedule.gamma > 1)
    peak = start * std::pow(schedule.gamma, (epochs - 1) / schedule.stepEpochs);
  if (schedule.kind == ScheduleKind::kCosine) peak = std::max(peak, schedule.minLr);
  constexpr double kMax = std::numeric_limits<float>::max();
  if (std::isfinite(peak) && peak <= kMax) return;
  const std::string scaled =
      absoluteLr ? std::string(" (--absolute-lr)")
                 : detail::concat(" (scaled by 8 x batch x accumulation x ", processes, " process",
                                  processes == 1 ? "" : "es", " / 512)");
  FIXRES_FAIL(UsageError, "--learning-rate ", learningRate, scaled, " gives the optimizer ",
              peak == start ? "a rate of " : "rates up to ", peak,
              ": must be at most the largest float32, ", kMax);
}

void RunConfig::validate() const {
  validateValues();
  FIXRES_CHECK(!trainPath.empty(), UsageError, "no training data: give --imnet-path (with train/)");
  FIXRES_CHECK(mode != RunMode::kFinetune || !model.weightPath.empty(), UsageError,
               "finetune needs --weight-path (the weights to fine-tune)");
  FIXRES_CHECK(!runDir.empty(), UsageError, "no run folder (--shared-folder-path / --save-path)");
}

EvalSettings RunConfig::evalSettings() const {
  EvalSettings e;
  e.batch = batch;
  e.workers = workers;
  e.testFlip = testFlip;
  e.skipBadImages = skipBadImages;
  return e;
}

Preprocessing RunConfig::preprocessing() const {
  Preprocessing p = model.preprocessing();
  p.sizes = {inputSize, evaluationSize()};
  p.resizeMode = resizeMode;
  p.dynamicSize = p.dynamicSize || progressive.enabled();
  return p;
}

nlohmann::json RunConfig::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  // The model as it runs: the defaults of what was left unset written in.
  RunConfig resolved = *this;
  resolved.model = model.withDefaults();
  visitSettings(resolved, JsonWriter{j});
  return j;
}

RunConfig RunConfig::fromJson(const nlohmann::json& j) {
  FIXRES_CHECK(j.is_object(), UsageError, "config: not a JSON object");
  RunMode mode = RunMode::kTrain;
  JsonReader reader{j};
  reader.read("mode", mode, runModes());
  RunConfig c = forMode(mode);
  visitSettings(c, reader);
  return c;
}

}  // namespace fixres::engine
