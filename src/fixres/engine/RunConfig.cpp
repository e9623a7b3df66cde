// Validation and JSON form of a run's configuration.
#include "fixres/engine/RunConfig.h"

#include "fixres/common/Error.h"

namespace fixres::engine {

void RunConfig::validate() const {
  FIXRES_CHECK(!trainPath.empty(), UsageError, "no training data: give --imnet-path (with train/)");
  FIXRES_CHECK(mode != RunMode::kFinetune || !weightPath.empty(), UsageError,
               "finetune needs --weight-path (the weights to fine-tune)");
  FIXRES_CHECK(inputSize >= 8 && inputSize <= 4096, UsageError,
               "--input-size must be in [8, 4096], got ", inputSize);
  FIXRES_CHECK(batch >= 1, UsageError, "--batch must be >= 1, got ", batch);
  FIXRES_CHECK(accumulationSteps >= 1, UsageError, "--accumulation-steps must be >= 1, got ",
               accumulationSteps);
  FIXRES_CHECK(precision == "auto" || precision == "fp32" || precision == "bf16", UsageError,
               "--precision must be auto, fp32 or bf16, got '", precision, "'");
  FIXRES_CHECK(
      memoryFormat == "auto" || memoryFormat == "contiguous" || memoryFormat == "channels-last",
      UsageError, "--memory-format must be auto, contiguous or channels-last, got '", memoryFormat,
      "'");
  FIXRES_CHECK(normalizeOn == "auto" || normalizeOn == "cpu" || normalizeOn == "device", UsageError,
               "--normalize-on must be auto, cpu or device, got '", normalizeOn, "'");
  FIXRES_CHECK(workers >= 1, UsageError, "--workers must be >= 1, got ", workers);
  FIXRES_CHECK(epochs >= 1, UsageError, "--epochs must be >= 1, got ", epochs);
  FIXRES_CHECK(learningRate > 0, UsageError, "--learning-rate must be > 0, got ", learningRate);
  FIXRES_CHECK(momentum >= 0 && momentum < 1, UsageError, "--momentum must be in [0, 1), got ",
               momentum);
  FIXRES_CHECK(weightDecay >= 0, UsageError, "--weight-decay must be >= 0, got ", weightDecay);
  FIXRES_CHECK(labelSmoothing >= 0 && labelSmoothing < 1, UsageError,
               "--label-smoothing must be in [0, 1), got ", labelSmoothing);
  FIXRES_CHECK(evalEvery >= 1, UsageError, "--eval-every must be >= 1, got ", evalEvery);
  FIXRES_CHECK(sampler == "ra" || sampler == "distributed", UsageError,
               "--sampler must be ra or distributed, got '", sampler, "'");
  FIXRES_CHECK(repetitions >= 1, UsageError, "--repetitions must be >= 1, got ", repetitions);
  FIXRES_CHECK(lenFactor > 0, UsageError, "--len-factor must be > 0, got ", lenFactor);
  FIXRES_CHECK(resizeMode == "fixres" || resizeMode == "shorter", UsageError,
               "--resize-mode must be fixres or shorter, got '", resizeMode, "'");
  FIXRES_CHECK(!runDir.empty(), UsageError, "no run folder (--shared-folder-path / --save-path)");
}

nlohmann::json RunConfig::toJson() const {
  return {{"mode", mode == RunMode::kTrain ? "train" : "finetune"},
          {"architecture", architecture},
          {"num_classes", numClasses},
          {"weight_path", weightPath},
          {"skip_classifier", skipClassifier},
          {"train_path", trainPath},
          {"val_path", valPath},
          {"input_size", inputSize},
          {"eval_size", evalSize},
          {"train_transform", trainTransform},
          {"resize_mode", resizeMode},
          {"batch", batch},
          {"accumulation_steps", accumulationSteps},
          {"workers", workers},
          {"skip_bad_images", skipBadImages},
          {"sampler", sampler},
          {"repetitions", repetitions},
          {"len_factor", lenFactor},
          {"iteration_cap", iterationCap},
          {"epochs", epochs},
          {"learning_rate", learningRate},
          {"absolute_lr", absoluteLr},
          {"momentum", momentum},
          {"weight_decay", weightDecay},
          {"nesterov", nesterov},
          {"lr_schedule", lrSchedule},
          {"lr_step", lrStep},
          {"lr_gamma", lrGamma},
          {"warmup_epochs", warmupEpochs},
          {"label_smoothing", labelSmoothing},
          {"eval_every", evalEvery},
          {"finetune_bn_affine", finetuneBnAffine},
          {"test_flip", testFlip},
          {"precision", precision},
          {"memory_format", memoryFormat},
          {"normalize_on", normalizeOn},
          {"seed", seed},
          {"stop_after_steps", stopAfterSteps},
          {"run_dir", runDir}};
}

}  // namespace fixres::engine
