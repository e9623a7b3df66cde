// Validation and JSON form of a run's configuration.
#include "fixres/engine/RunConfig.h"

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// One JSON key <-> one field, for both directions. Choices are written by their canonical
// name and read back through the same table.
template <typename T>
void readValue(const nlohmann::json& j, const char* key, T& out) {
  if (!j.contains(key) || j.at(key).is_null()) return;
  try {
    out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    FIXRES_FAIL(UsageError, "config: '", key, "' has the wrong type (", j.at(key).dump(), ")");
  }
}

template <typename E>
void readChoice(const nlohmann::json& j, const char* key, const ChoiceTable<E>& table, E& out) {
  std::string name;
  readValue(j, key, name);
  if (!name.empty()) out = parseChoice(table, name, std::string("config: '") + key + "'");
}

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
  return {{"mode", choiceName(runModes(), mode)},
          {"architecture", model.architecture},
          {"num_classes", model.numClasses},
          {"weight_path", model.weightPath},
          {"skip_classifier", model.skipClassifier},
          {"train_path", trainPath},
          {"val_path", valPath},
          {"input_size", inputSize},
          {"eval_size", evalSize},
          {"train_transform", image::transformKindName(trainTransform)},
          {"resize_mode", choiceName(image::resizeModes(), resizeMode)},
          {"batch", batch},
          {"accumulation_steps", accumulationSteps},
          {"workers", workers},
          {"skip_bad_images", skipBadImages},
          {"sampler", choiceName(data::samplerKinds(), sampler)},
          {"repetitions", repetitions},
          {"iteration_cap", iterationCap},
          {"epochs", epochs},
          {"learning_rate", learningRate},
          {"absolute_lr", absoluteLr},
          {"momentum", momentum},
          {"weight_decay", weightDecay},
          {"nesterov", nesterov},
          {"lr_schedule", choiceName(scheduleKinds(), lrSchedule)},
          {"lr_step", lrStep},
          {"lr_gamma", lrGamma},
          {"warmup_epochs", warmupEpochs},
          {"label_smoothing", labelSmoothing},
          {"eval_every", evalEvery},
          {"finetune_bn_affine", finetuneBnAffine},
          {"test_flip", testFlip},
          {"precision", choiceName(precisionChoices(), numerics.precision)},
          {"memory_format", choiceName(memoryFormatChoices(), numerics.memoryFormat)},
          {"normalize_on", choiceName(normalizeOnChoices(), numerics.normalizeOn)},
          {"seed", seed},
          {"stop_after_steps", stopAfterSteps},
          {"run_dir", runDir}};
}

RunConfig RunConfig::fromJson(const nlohmann::json& j) {
  FIXRES_CHECK(j.is_object(), UsageError, "config: not a JSON object");
  RunMode mode = RunMode::kTrain;
  readChoice(j, "mode", runModes(), mode);
  RunConfig c = forMode(mode);
  readValue(j, "architecture", c.model.architecture);
  readValue(j, "num_classes", c.model.numClasses);
  readValue(j, "weight_path", c.model.weightPath);
  readValue(j, "skip_classifier", c.model.skipClassifier);
  readValue(j, "train_path", c.trainPath);
  readValue(j, "val_path", c.valPath);
  readValue(j, "input_size", c.inputSize);
  readValue(j, "eval_size", c.evalSize);
  readChoice(j, "train_transform", image::transformKinds(), c.trainTransform);
  readChoice(j, "resize_mode", image::resizeModes(), c.resizeMode);
  readValue(j, "batch", c.batch);
  readValue(j, "accumulation_steps", c.accumulationSteps);
  readValue(j, "workers", c.workers);
  readValue(j, "skip_bad_images", c.skipBadImages);
  readChoice(j, "sampler", data::samplerKinds(), c.sampler);
  readValue(j, "repetitions", c.repetitions);
  readValue(j, "iteration_cap", c.iterationCap);
  readValue(j, "epochs", c.epochs);
  readValue(j, "learning_rate", c.learningRate);
  readValue(j, "absolute_lr", c.absoluteLr);
  readValue(j, "momentum", c.momentum);
  readValue(j, "weight_decay", c.weightDecay);
  readValue(j, "nesterov", c.nesterov);
  readChoice(j, "lr_schedule", scheduleKinds(), c.lrSchedule);
  readValue(j, "lr_step", c.lrStep);
  readValue(j, "lr_gamma", c.lrGamma);
  readValue(j, "warmup_epochs", c.warmupEpochs);
  readValue(j, "label_smoothing", c.labelSmoothing);
  readValue(j, "eval_every", c.evalEvery);
  readValue(j, "finetune_bn_affine", c.finetuneBnAffine);
  readValue(j, "test_flip", c.testFlip);
  readChoice(j, "precision", precisionChoices(), c.numerics.precision);
  readChoice(j, "memory_format", memoryFormatChoices(), c.numerics.memoryFormat);
  readChoice(j, "normalize_on", normalizeOnChoices(), c.numerics.normalizeOn);
  readValue(j, "seed", c.seed);
  readValue(j, "stop_after_steps", c.stopAfterSteps);
  readValue(j, "run_dir", c.runDir);
  return c;
}

}  // namespace fixres::engine
