// The rows of RunConfig's own fields, and the order in which the components' rows join them
// (config.json's key order). Included by RunConfig.h only.
#pragma once

#include "fixres/engine/RunConfig.h"

namespace fixres::engine {

// What --input-size is to each command.
inline constexpr CommandHelp kInputSizeHelp[] = {
    {"train", "The training resolution in px (with progressive resizing: the evaluations')"},
    {"finetune", "The test resolution in px, fine-tuned at"},
    {"eval", "Test resolutions in px, comma-separated (default: a model folder's, else 224)"},
    {"extract,calibrate", "The test resolution in px (default: a model folder's, else 224)"},
    {"predict", "The test resolution in px (default: a model folder's, else the architecture's)"},
    {"export",
     "The test resolution in px recorded with the weights (default: a model folder's, else the "
     "architecture's)"},
    {"bench train,bench eval,bench data", "The input resolution in px"},
    {nullptr, nullptr}};

// What --seed seeds in the commands that are not runs.
inline constexpr CommandHelp kSeedHelp[] = {
    {"shard", "Seed of the sample order"},
    {"holdout", "Seed of the choice: the same folder, fraction and seed move the same images"},
    {nullptr, nullptr}};

// Rows other commands bind too, by these names (cli/Flags.h: bindSetting).
inline constexpr Setting kInputSizeRow{
    "input_size",  "--input-size",           "Data", "Resolution in px",
    kImageSizes,   SettingRole::kDefinesRun, "",     "",
    kInputSizeHelp};
inline constexpr Setting kSeedRow{"seed",
                                  "--seed",
                                  "Optimisation",
                                  "Seed of initialisation, sampling and augmentation",
                                  Range::integers(0),
                                  SettingRole::kDefinesRun,
                                  "",
                                  "",
                                  kSeedHelp};
inline constexpr Setting kSkipBadImagesRow{"skip_bad_images", "--skip-bad-images", "Data",
                                           "Skip unreadable images (counted) instead of failing"};
inline constexpr Setting kBatchRow{"batch",
                                   "--batch,--batch-size,-b",
                                   "Data",
                                   "Images per process and step",
                                   Range::integers(1, 1 << 20),
                                   SettingRole::kDefinesRun};
inline constexpr Setting kWorkersRow{"workers", "--workers", "Data", "Loader threads per process",
                                     Range::integers(1, 1024)};
inline constexpr Setting kRandomEraseRow{
    "random_erase",
    "--random-erase",
    "Data",
    "RandomErasing probability on the normalised train images (torchvision's: scale 0.02 "
    "to 0.33, ratio 0.3 to 3.3, value 0); 0: off",
    Range::reals(0, 1),
    SettingRole::kDefinesRun};
inline constexpr Setting kRaMagnitudeRow{
    "ra_magnitude",
    "--ra-magnitude",
    "Data",
    "RandAugment magnitude bin (of 31), with --auto-augment ra",
    Range::integers(0, 30),
    SettingRole::kDefinesRun};
inline constexpr Setting kAutoAugmentRow{
    "auto_augment",
    "--auto-augment",
    "Data",
    "Automatic augmentation of the train transform (torch, full, v2-train), after the "
    "crop, flip and colour jitter, as torchvision's references: none, ra (RandAugment), "
    "ta_wide (TrivialAugmentWide), augmix (AugMix) or imagenet (the AutoAugment ImageNet "
    "policy)",
    {},
    SettingRole::kDefinesRun};
inline constexpr Setting kAugmixSeverityRow{"augmix_severity",
                                            "--augmix-severity",
                                            "Data",
                                            "AugMix severity, with --auto-augment augmix",
                                            Range::integers(1, 10),
                                            SettingRole::kDefinesRun};
inline constexpr Setting kTestFlipRow{"test_flip", "--test-flip", "Data",
                                      "Average logits with the horizontally flipped image"};
inline constexpr Setting kAbsoluteLrRow{
    "absolute_lr", "--absolute-lr", "Optimisation",
    "Use the learning rate as given (no linear scaling 8 x lr x batch x processes / 512)"};

template <typename Self, typename V>
void RunConfig::visitSettings(Self& c, V&& v) {
  constexpr auto kDefines = SettingRole::kDefinesRun;
  constexpr auto kCompared = SettingRole::kCompared;
  constexpr auto kNotCompared = SettingRole::kNotCompared;
  constexpr auto kInvocation = SettingRole::kInvocation;
  const Range size = kImageSizes;
  v(Setting{"mode", "", "", "train or finetune", {}, kDefines}, c.mode, runModes());
  ModelSpec::visitSettings(c.model, v);
  v(Setting{"train_path", "", "", "The training image folder", {}, kDefines}, c.trainPath);
  v(Setting{"val_path", "", "", "The evaluation image folder"}, c.valPath);
  v(kInputSizeRow, c.inputSize);
  v(Setting{"eval_size", "--eval-size", "Data", "Evaluation resolution (0: --input-size)",
            size.orValue(0, "--input-size"), kCompared, "finetune"},
    c.evalSize);
  ProgressiveResize::visitSettings(c.progressive, v);
  v(Setting{"train_transform", "--transform", "Data", "Train transform", {}, kDefines},
    c.trainTransform, image::transformKinds());
  v(kResizeModeRow, c.resizeMode, image::resizeModes());
  v(kAutoAugmentRow, c.autoAugment, image::autoAugmentKinds());
  v(kRaMagnitudeRow, c.raMagnitude);
  v(kAugmixSeverityRow, c.augmixSeverity);
  v(kRandomEraseRow, c.randomErase);
  v(kBatchRow, c.batch);
  v(Setting{"accumulation_steps", "--accumulation-steps", "Optimisation",
            "Micro-batches of --batch whose gradients add up to one optimizer step",
            Range::integers(1), kDefines},
    c.accumulationSteps);
  v(kWorkersRow, c.workers);
  v(kSkipBadImagesRow, c.skipBadImages);
  v(Setting{"sampler",
            "--sampler",
            "Data",
            "ra (repeated augmentation, FixRes), distributed (torch DistributedSampler) or shard "
            "(tar shards in order; shard folders always use it)",
            {},
            kDefines},
    c.sampler, data::samplerKinds());
  v(Setting{"repetitions", "--repetitions", "Data", "Repeated augmentation: copies of each image",
            Range::integers(1, 100), kDefines},
    c.repetitions);
  v(Setting{"iteration_cap", "--iteration-cap", "Data",
            "Max iterations per epoch (-1: FixRes cap 5005*512/total batch for train, none for "
            "finetune)",
            Range::integers(1).orValue(-1, "none"), kDefines},
    c.iterationCap);
  v(Setting{"epochs", "--epochs", "Optimisation", "Epochs", Range::integers(1)}, c.epochs);
  v(Setting{"learning_rate", "--learning-rate", "Optimisation",
            "Base learning rate, scaled 8 x lr x batch x processes / 512 unless --absolute-lr",
            Range::reals(0, INFINITY, /*loOpen=*/true)},
    c.learningRate);
  v(kAbsoluteLrRow, c.absoluteLr);
  StepOptions::visitSettings(c.step, v);
  ScheduleOptions::visitSettings(c.schedule, v);
  EmaOptions::visitSettings(c.ema, v);
  MixOptions::visitSettings(c.mix, v);
  v(Setting{"eval_every", "--eval-every", "Optimisation",
            "Evaluate every K epochs (and after the last)", Range::integers(1)},
    c.evalEvery);
  v(kTestFlipRow, c.testFlip);
  NumericsOptions::visitSettings(c.numerics, v);
  v(kSeedRow, c.seed);
  v(Setting{"stop_after_steps", "--stop-after-steps", "Optimisation",
            "Stop (with a checkpoint) once this many steps are done in total (-1: never); rerun "
            "to resume. A run already there stops at once",
            Range::integers(1).orValue(-1, "never"), kNotCompared},
    c.stopAfterSteps);
  v(Setting{"checkpoint_every_steps", "--checkpoint-every-steps", "Optimisation",
            "Also write checkpoint.pth every K steps in total, besides each epoch's end, so that "
            "a restart (fixres launch --max-restarts) loses little work (0: off)",
            Range::integers(0), kNotCompared},
    c.checkpointEverySteps);
  KeepBestOptions::visitSettings(c.keepBest, v);
  v(Setting{"nan_policy", "--nan-policy", "Optimisation",
            "A step whose loss or gradient is NaN or inf: stop (exit 1, the state before it "
            "saved) or skip it (warned, counted in metrics.jsonl)"},
    c.nanPolicy, nanPolicies());
  v(Setting{"run_dir", "", "", "The run folder", {}, kNotCompared}, c.runDir);
  v(Setting{"",
            "--allow-config-change",
            "Optimisation",
            "Resume even when settings that define the run (architecture, classes, sizes, batch, "
            "accumulation, transform, sampler, seed, data) differ from the checkpoint's",
            {},
            kInvocation},
    c.allowConfigChange);
  v(Setting{"", "--log-every", "Output", "Progress line every N iterations", Range::integers(1),
            kInvocation},
    c.logEvery);
}

}  // namespace fixres::engine
