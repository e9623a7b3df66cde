// Everything a train / finetune run needs, as typed options: bound directly by the CLI (the
// defaults of RunConfig::forMode are what --help shows), validated here, saved as config.json
// beside the checkpoints and read back from it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fixres/data/FileIndex.h"
#include "fixres/data/Sampler.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/KeepBestOptions.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/engine/ProgressiveResize.h"
#include "fixres/image/Transform.h"
#include "fixres/optim/Optimizer.h"
#include "fixres/runtime/Numerics.h"
#include "fixres/step/BatchMix.h"
#include "fixres/step/ModelEma.h"
#include "fixres/step/Schedule.h"
#include "fixres/step/TrainStep.h"

namespace fixres::engine {

enum class RunMode { kTrain, kFinetune };
const ChoiceTable<RunMode>& runModes();  // train, finetune

// What a step whose loss or gradient is not finite (NaN, inf) does: stop the run (exit 1, the
// state before that step saved) or skip the step (not applied, counted, warned about).
enum class NanPolicy { kStop, kSkip };
const ChoiceTable<NanPolicy>& nanPolicies();  // stop, skip

// FixRes's repeated-augmentation epoch: floor(2 N) samples (RASampler's len_factor).
constexpr double kRepeatedAugLenFactor = 2.0;

struct RunConfig {
  RunMode mode = RunMode::kTrain;
  ModelSpec model;  // finetune: model.weightPath is required
  // data
  std::string trainPath;             // image folder
  std::string valPath;               // image folder (may be empty: no evaluation)
  data::FileIndexOptions fileIndex;  // how both folders are listed (off: plain scans)
  int inputSize = 224;               // train resolution (finetune: the test resolution)
  int evalSize = 0;                  // 0: inputSize
  // train: the training resolution ramps per epoch (inputSize then sizes the evaluations only).
  ProgressiveResize progressive;
  image::TransformKind trainTransform = image::TransformKind::kFull;
  image::ResizeMode resizeMode = image::ResizeMode::kFixres;  // of the val transform
  // torchvision references' augmentations on the train transform (torch, full, v2-train only):
  image::AutoAugmentKind autoAugment = image::AutoAugmentKind::kNone;  // --auto-augment
  int raMagnitude = 9;                                                 // RandAugment's bin
  int augmixSeverity = 3;                                              // AugMix's severity
  double randomErase = 0.0;    // RandomErasing probability on the normalised output
  int batch = 64;              // per process and micro-batch
  int accumulationSteps = 1;   // micro-batches per optimizer step
  int workers = 4;             // loader threads per process
  bool skipBadImages = false;  // count and skip unreadable images instead of failing
  data::SamplerKind sampler = data::SamplerKind::kRepeatedAug;
  int repetitions = 3;
  int64_t iterationCap = -1;  // >= 1; -1: FixRes cap 5005*512/total batch (train), none (finetune)
  // optimisation
  int epochs = 120;
  double learningRate = 0.02;
  bool absoluteLr = false;  // false: scale as 8 x lr x batch x processes / 512
  // The step's settings (optimizer, decay, clipping, smoothing, sync-bn, all-reduce); its
  // learningRate, finetune and precision are set from the run when the step is made.
  StepOptions step;
  // The schedule's kind, period, factor and warm-up; its baseLr and totalEpochs come from the run.
  ScheduleOptions schedule;
  // torchvision references' recipe: EMA weights (ModelEma.h), evaluated beside the raw ones.
  EmaOptions ema;
  // Batch mixing (BatchMix.h): > 0 enables mixup / CutMix with lambda ~ Beta(alpha, alpha).
  MixOptions mix;
  int evalEvery = 1;      // evaluate every K epochs (and after the last)
  bool testFlip = false;  // evaluation: average logits with the flipped image
  NumericsOptions numerics;
  uint64_t seed = 0;
  int64_t stopAfterSteps = -1;  // >= 1: stop (checkpointed) after this many steps in total; -1 none
  // >= 1: also write checkpoint.pth every K steps in total (besides each epoch's end); 0 off.
  int64_t checkpointEverySteps = 0;
  KeepBestOptions
      keepBest;  // --checkpoint-hist (KeepBestOptions.h; the part is train/KeepBest.cpp)
  NanPolicy nanPolicy = NanPolicy::kStop;
  // Resume even when settings that define the run (resumeChanges) differ from the stored ones.
  // A choice of this invocation only: not part of config.json.
  bool allowConfigChange = false;
  // outputs
  std::string runDir;  // checkpoints, config.json, metrics.jsonl (rank 0 writes)
  int logEvery = 20;
  // TensorBoard event files in runDir (EventFile.h). An output choice of this invocation only:
  // not part of config.json.
  bool tensorboard = true;

  // Every setting of a run, in config.json order: the rows of its own fields (RunSettings.h) and
  // those of the components it holds (common/Setting.h). The one list config.json, the CLI, the
  // range checks and resume's comparison are made from.
  template <typename Self, typename V>
  static void visitSettings(Self& c, V&& v);

  // The reference's recipes: train = ResNet-50 from scratch (RandomResizedCrop 'full' at 224,
  // repeated augmentation x3, 120 epochs, lr 0.02 scaled, StepLR 30); finetune = the FixRes
  // step at the test resolution (384, val transform, DistributedSampler, 56 epochs, lr 1e-3).
  static RunConfig forMode(RunMode mode);

  // UsageError naming the flag: every value on its own (ranges, finiteness; what the CLI checks
  // while parsing), then what a run needs (data, run folder).
  void validateValues() const;
  void validate() const;
  // The rate the optimizer starts from with `processes` ranks: learningRate as given
  // (absoluteLr), else scaled by 8 x batch x accumulationSteps x processes / 512.
  double effectiveLearningRate(int processes) const;
  // UsageError naming --learning-rate unless every rate the schedule reaches with `processes`
  // ranks (the effective rate, the StepLR decays when --lr-gamma > 1, --lr-min) is a finite
  // float32, as the optimizer holds it. validateValues checks one process.
  void checkLearningRate(int processes) const;
  // The settings of the evaluations run during training.
  EvalSettings evalSettings() const;
  // The run's preprocessing record: the training and evaluation sizes, the model's
  // normalisation and filter, the val resize rule, FixRes's crop; dynamic with progressive
  // resizing.
  Preprocessing preprocessing() const;
  int evaluationSize() const { return evalSize > 0 ? evalSize : inputSize; }

  nlohmann::json toJson() const;
  // Reads toJson()'s form back (also the config.json of earlier versions, whose extra keys are
  // ignored); keys that are absent keep forMode(mode)'s defaults. UsageError naming the key
  // for a value of the wrong type or an unknown choice.
  static RunConfig fromJson(const nlohmann::json& json);
};

// A setting that differs between the configuration a run started with and the one it resumes with.
struct ConfigChange {
  std::string key;            // config.json key
  std::string before, after;  // JSON text
  bool definesRun = false;    // must not change on resume (architecture, batch, seed, ...)
};
// The settings of `now` that differ from `stored` (config.json or a checkpoint's config, of this
// or an earlier version; keys `stored` lacks are not compared), in key order. run_dir and
// stop_after_steps are never compared. A sampler changed to `shard` (the sampler the data's
// reader requires) is noted, not refused: older configs of shard runs hold --sampler's value.
std::vector<ConfigChange> resumeChanges(const nlohmann::json& stored, const RunConfig& now);

// <shared>/<mode>/<job-id> (shared: "runs" when empty).
std::string runFolder(const std::string& sharedFolder, RunMode mode, const std::string& jobId);

}  // namespace fixres::engine

#include "fixres/engine/RunSettings.h"  // RunConfig::visitSettings
