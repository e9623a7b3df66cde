// Validation and JSON form of a run's configuration.
#include "fixres/engine/RunConfig.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// Every field with its config.json key: the one list both directions use. Choices are written by
// their canonical name and read back through the same table.
template <typename Config, typename Visitor>
void visitFields(Config& c, Visitor&& v) {
  v("mode", c.mode, runModes());
  v("architecture", c.model.architecture);
  v("efficientnet_model", c.model.efficientNetModel);
  v("interpolation", c.model.interpolation, image::interpolations());
  v("mean", c.model.mean);
  v("std", c.model.std);
  v("drop_rate", c.model.dropRate);
  v("drop_path_rate", c.model.dropPathRate);
  v("num_classes", c.model.numClasses);
  v("weight_path", c.model.weightPath);
  v("skip_classifier", c.model.skipClassifier);
  v("use_ema", c.model.useEma);
  v("train_path", c.trainPath);
  v("val_path", c.valPath);
  v("input_size", c.inputSize);
  v("eval_size", c.evalSize);
  v("min_res", c.progressive.minRes);
  v("max_res", c.progressive.maxRes);
  v("start_ramp", c.progressive.startRamp);
  v("end_ramp", c.progressive.endRamp);
  v("train_transform", c.trainTransform, image::transformKinds());
  v("resize_mode", c.resizeMode, image::resizeModes());
  v("auto_augment", c.autoAugment, image::autoAugmentKinds());
  v("ra_magnitude", c.raMagnitude);
  v("augmix_severity", c.augmixSeverity);
  v("random_erase", c.randomErase);
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
  v("opt", c.opt, optimizerKinds());
  v("momentum", c.momentum);
  v("weight_decay", c.weightDecay);
  v("norm_weight_decay", c.normWeightDecay);
  v("bias_weight_decay", c.biasWeightDecay);
  v("nesterov", c.nesterov);
  v("clip_grad_norm", c.clipGradNorm);
  v("lr_schedule", c.lrSchedule, scheduleKinds());
  v("lr_step", c.lrStep);
  v("lr_gamma", c.lrGamma);
  v("warmup_epochs", c.warmupEpochs);
  v("label_smoothing", c.labelSmoothing);
  v("model_ema", c.modelEma);
  v("model_ema_decay", c.modelEmaDecay);
  v("model_ema_steps", c.modelEmaSteps);
  v("mixup_alpha", c.mixupAlpha);
  v("cutmix_alpha", c.cutmixAlpha);
  v("eval_every", c.evalEvery);
  v("finetune_bn_affine", c.finetuneBnAffine);
  v("test_flip", c.testFlip);
  v("precision", c.numerics.precision, numericsChoices().precision);
  v("memory_format", c.numerics.memoryFormat, numericsChoices().memoryFormat);
  v("normalize_on", c.numerics.normalizeOn, numericsChoices().normalizeOn);
  v("sync_bn", c.syncBn);
  v("grad_compression", c.gradCompression, distributed::gradCompressionNames());
  v("bucket_mb", c.bucketMb);
  v("seed", c.seed);
  v("stop_after_steps", c.stopAfterSteps);
  v("checkpoint_every_steps", c.checkpointEverySteps);
  v("nan_policy", c.nanPolicy, nanPolicies());
  v("run_dir", c.runDir);
}

struct JsonWriter {
  nlohmann::json& out;
  template <typename T>
  void operator()(const char* key, const T& value) {
    out[key] = value;
  }
  template <typename T>
  void operator()(const char* key, const std::optional<T>& value) {
    out[key] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
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
  template <typename T>
  void operator()(const char* key, std::optional<T>& out) {
    if (!in.contains(key) || in.at(key).is_null()) return;
    T value{};
    (*this)(key, value);
    out = value;
  }
  template <typename E>
  void operator()(const char* key, E& out, const ChoiceTable<E>& table) {
    std::string name;
    (*this)(key, name);
    if (!name.empty()) out = parseChoice(table, name, std::string("config: '") + key + "'");
  }
};

// The settings that make a run what it is: the model, the data and the order it is seen in, the
// size of a step, the seed. Resuming with any of them changed would mix two runs.
const char* const kDefinesRun[] = {"mode",
                                   "architecture",
                                   "efficientnet_model",
                                   "num_classes",
                                   "train_path",
                                   "input_size",
                                   "min_res",
                                   "max_res",
                                   "start_ramp",
                                   "end_ramp",
                                   "train_transform",
                                   "auto_augment",
                                   "ra_magnitude",
                                   "augmix_severity",
                                   "random_erase",
                                   "batch",
                                   "accumulation_steps",
                                   "sampler",
                                   "repetitions",
                                   "iteration_cap",
                                   "opt",
                                   "seed"};
// Per-invocation settings, never compared.
const char* const kNotCompared[] = {"run_dir", "stop_after_steps", "checkpoint_every_steps"};

template <size_t N>
bool among(const char* const (&names)[N], const std::string& key) {
  return std::find(std::begin(names), std::end(names), key) != std::end(names);
}

// "--flag must be a finite number in [lo, hi), got v" and its one-sided forms; hi = inf: no
// upper bound.
void checkReal(const char* flag, double v, double lo, bool loOpen, double hi = INFINITY,
               bool hiOpen = true) {
  const bool ok = std::isfinite(v) && (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
  if (ok) return;
  const std::string range =
      std::isinf(hi) ? (loOpen ? "> " : ">= ") + detail::concat(lo)
                     : detail::concat(loOpen ? "(" : "[", lo, ", ", hi, hiOpen ? ")" : "]");
  FIXRES_FAIL(UsageError, flag, " must be a finite number ", std::isinf(hi) ? "" : "in ", range,
              ", got ", v);
}

void checkAtLeast(const char* flag, int64_t v, int64_t lo) {
  FIXRES_CHECK(v >= lo, UsageError, flag, " must be >= ", lo, ", got ", v);
}

// -1 (none) or a count >= 1.
void checkCountOrNone(const char* flag, int64_t v) {
  FIXRES_CHECK(v == -1 || v >= 1, UsageError, flag, " must be >= 1 (or -1: none), got ", v);
}

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
  std::vector<ConfigChange> out;
  for (const auto& [key, value] : after.items()) {
    if (!stored.contains(key) || among(kNotCompared, key) || before.at(key) == value) continue;
    out.push_back({key, before.at(key).dump(), value.dump(), among(kDefinesRun, key)});
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
  FIXRES_CHECK(model.numClasses >= 0, UsageError,
               "--num-classes must be >= 1 (or 0: the number of dataset classes), got ",
               model.numClasses);
  FIXRES_CHECK(inputSize >= 8 && inputSize <= 4096, UsageError,
               "--input-size must be in [8, 4096], got ", inputSize);
  FIXRES_CHECK(evalSize == 0 || (evalSize >= 8 && evalSize <= 4096), UsageError,
               "--eval-size must be in [8, 4096] (or 0: --input-size), got ", evalSize);
  checkAtLeast("--batch", batch, 1);
  checkAtLeast("--accumulation-steps", accumulationSteps, 1);
  checkAtLeast("--workers", workers, 1);
  FIXRES_CHECK(std::isfinite(bucketMb) && bucketMb > 0 && bucketMb <= 1024, UsageError,
               "--bucket-mb must be in (0, 1024], got ", bucketMb);
  FIXRES_CHECK(repetitions >= 1 && repetitions <= 100, UsageError,
               "--repetitions must be in [1, 100], got ", repetitions);
  checkCountOrNone("--iteration-cap", iterationCap);
  checkAtLeast("--epochs", epochs, 1);
  checkReal("--learning-rate", learningRate, 0, /*loOpen=*/true);
  checkReal("--momentum", momentum, 0, false, 1, /*hiOpen=*/true);
  checkReal("--weight-decay", weightDecay, 0, false);
  if (normWeightDecay) checkReal("--norm-weight-decay", *normWeightDecay, 0, false);
  if (biasWeightDecay) checkReal("--bias-weight-decay", *biasWeightDecay, 0, false);
  checkReal("--clip-grad-norm", clipGradNorm, 0, false);
  FIXRES_CHECK(!nesterov || (opt == OptimizerKind::kSgd && momentum > 0), UsageError,
               "--nesterov needs --opt sgd and --momentum > 0");
  checkAtLeast("--lr-step", lrStep, 1);
  checkReal("--lr-gamma", lrGamma, 0, /*loOpen=*/true);
  checkReal("--warmup-epochs", warmupEpochs, 0, false);
  checkReal("--label-smoothing", labelSmoothing, 0, false, 1, /*hiOpen=*/true);
  checkReal("--model-ema-decay", modelEmaDecay, 0, false, 1, /*hiOpen=*/false);
  checkAtLeast("--model-ema-steps", modelEmaSteps, 1);
  checkReal("--mixup-alpha", mixupAlpha, 0, false);
  checkReal("--cutmix-alpha", cutmixAlpha, 0, false);
  checkAtLeast("--eval-every", evalEvery, 1);
  checkCountOrNone("--stop-after-steps", stopAfterSteps);
  checkAtLeast("--checkpoint-every-steps", checkpointEverySteps, 0);
  checkAtLeast("--log-every", logEvery, 1);
  progressive.validate(epochs);
  FIXRES_CHECK(!progressive.enabled() || mode == RunMode::kTrain, UsageError,
               "--min-res/--max-res (progressive resizing) are for train, not finetune");
  image::validate(image::AutoAugmentOptions{autoAugment, raMagnitude, augmixSeverity});
  checkReal("--random-erase", randomErase, 0, false, 1, /*hiOpen=*/false);
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
