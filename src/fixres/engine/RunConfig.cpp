// Validation and JSON form of a run's configuration.
#include "fixres/engine/RunConfig.h"

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// Every field with its config.json key: the one list both directions use. Choices are written by
// their canonical name and read back through the same table.
template <typename Config, typename Visitor>
void visitFields(Config& c, Visitor&& v) {
  v("mode", c.mode, runModes());
  v("architecture", c.model.architecture);
  v("num_classes", c.model.numClasses);
  v("weight_path", c.model.weightPath);
  v("skip_classifier", c.model.skipClassifier);
  v("train_path", c.trainPath);
  v("val_path", c.valPath);
  v("input_size", c.inputSize);
  v("eval_size", c.evalSize);
  v("train_transform", c.trainTransform, image::transformKinds());
  v("resize_mode", c.resizeMode, image::resizeModes());
  v("batch", c.batch);
  v("accumulation_steps", c.accumulationSteps);
  v("workers", c.workers);
  v("skip_bad_images", c.skipBadImages);
  v("sampler", c.sampler, data::samplerKinds());
  v("repetitions", c.repetitions);
  v("iteration_cap", c.iterationCap);
  v("epochs", c.epochs);
  v("learning_rate", c.learningRate);
  v("absolute_lr", c.absoluteLr);
  v("momentum", c.momentum);
  v("weight_decay", c.weightDecay);
  v("nesterov", c.nesterov);
  v("lr_schedule", c.lrSchedule, scheduleKinds());
  v("lr_step", c.lrStep);
  v("lr_gamma", c.lrGamma);
  v("warmup_epochs", c.warmupEpochs);
  v("label_smoothing", c.labelSmoothing);
  v("eval_every", c.evalEvery);
  v("finetune_bn_affine", c.finetuneBnAffine);
  v("test_flip", c.testFlip);
  v("precision", c.numerics.precision, numericsChoices().precision);
  v("memory_format", c.numerics.memoryFormat, numericsChoices().memoryFormat);
  v("normalize_on", c.numerics.normalizeOn, numericsChoices().normalizeOn);
  v("seed", c.seed);
  v("stop_after_steps", c.stopAfterSteps);
  v("run_dir", c.runDir);
}

struct JsonWriter {
  nlohmann::json& out;
  template <typename T>
  void operator()(const char* key, const T& value) {
    out[key] = value;
  }
  template <typename E>
  void operator()(const char* key, const E& value, const ChoiceTable<E>& table) {
    out[key] = choiceName(table, value);
  }
};

// Keys that are absent (or null) leave the field as it is.
struct JsonReader {
  const nlohmann::json& in;
  template <typename T>
  void operator()(const char* key, T& out) {
    if (!in.contains(key) || in.at(key).is_null()) return;
    try {
      out = in.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      FIXRES_FAIL(UsageError, "config: '", key, "' has the wrong type (", in.at(key).dump(), ")");
    }
  }
  template <typename E>
  void operator()(const char* key, E& out, const ChoiceTable<E>& table) {
    std::string name;
    (*this)(key, name);
    if (!name.empty()) out = parseChoice(table, name, std::string("config: '") + key + "'");
  }
};

}  // namespace

const ChoiceTable<RunMode>& runModes() {
  static const ChoiceTable<RunMode> kTable = {
      "run mode", {{"train", RunMode::kTrain}, {"finetune", RunMode::kFinetune}}};
  return kTable;
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

void RunConfig::validate() const {
  FIXRES_CHECK(!trainPath.empty(), UsageError, "no training data: give --imnet-path (with train/)");
  FIXRES_CHECK(mode != RunMode::kFinetune || !model.weightPath.empty(), UsageError,
               "finetune needs --weight-path (the weights to fine-tune)");
  FIXRES_CHECK(inputSize >= 8 && inputSize <= 4096, UsageError,
               "--input-size must be in [8, 4096], got ", inputSize);
  FIXRES_CHECK(batch >= 1, UsageError, "--batch must be >= 1, got ", batch);
  FIXRES_CHECK(accumulationSteps >= 1, UsageError, "--accumulation-steps must be >= 1, got ",
               accumulationSteps);
  FIXRES_CHECK(workers >= 1, UsageError, "--workers must be >= 1, got ", workers);
  FIXRES_CHECK(epochs >= 1, UsageError, "--epochs must be >= 1, got ", epochs);
  FIXRES_CHECK(learningRate > 0, UsageError, "--learning-rate must be > 0, got ", learningRate);
  FIXRES_CHECK(momentum >= 0 && momentum < 1, UsageError, "--momentum must be in [0, 1), got ",
               momentum);
  FIXRES_CHECK(weightDecay >= 0, UsageError, "--weight-decay must be >= 0, got ", weightDecay);
  FIXRES_CHECK(labelSmoothing >= 0 && labelSmoothing < 1, UsageError,
               "--label-smoothing must be in [0, 1), got ", labelSmoothing);
  FIXRES_CHECK(evalEvery >= 1, UsageError, "--eval-every must be >= 1, got ", evalEvery);
  FIXRES_CHECK(repetitions >= 1, UsageError, "--repetitions must be >= 1, got ", repetitions);
  FIXRES_CHECK(!runDir.empty(), UsageError, "no run folder (--shared-folder-path / --save-path)");
}

EvalSettings RunConfig::evalSettings() const {
  EvalSettings e;
  e.resizeMode = resizeMode;
  e.batch = batch;
  e.workers = workers;
  e.testFlip = testFlip;
  e.skipBadImages = skipBadImages;
  return e;
}

nlohmann::json RunConfig::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  visitFields(*this, JsonWriter{j});
  return j;
}

RunConfig RunConfig::fromJson(const nlohmann::json& j) {
  FIXRES_CHECK(j.is_object(), UsageError, "config: not a JSON object");
  RunMode mode = RunMode::kTrain;
  JsonReader reader{j};
  reader("mode", mode, runModes());
  RunConfig c = forMode(mode);
  visitFields(c, reader);
  return c;
}

}  // namespace fixres::engine
