// RunConfig's JSON form: config.json files written by fixres 0.1.0 before the options became
// typed (tests/unit/engine/data/config-0.1.0-*.json, written by that version's `fixres train`
// and `fixres finetune`) still read, and every choice goes through its name table both ways.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "fixres/common/Error.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::engine {
namespace {

nlohmann::json readJson(const std::string& name) {
  std::ifstream in(std::string(FIXRES_SOURCE_DIR) + "/tests/unit/engine/data/" + name);
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

void expectReadsBack(const nlohmann::json& old) {
  auto cfg = RunConfig::fromJson(old);
  auto now = cfg.toJson();
  int compared = 0;
  for (const auto& [key, value] : old.items()) {
    if (key == "len_factor") continue;  // a constant now (kRepeatedAugLenFactor), no flag
    ASSERT_TRUE(now.contains(key)) << key;
    EXPECT_EQ(now[key], value) << key;
    ++compared;
  }
  EXPECT_GE(compared, 35);
  EXPECT_EQ(old.at("len_factor").get<double>(), kRepeatedAugLenFactor);
}

TEST(RunConfigTest, ReadsTheTrainConfigOfVersion010) {
  auto old = readJson("config-0.1.0-train.json");
  expectReadsBack(old);
  auto cfg = RunConfig::fromJson(old);
  EXPECT_EQ(cfg.mode, RunMode::kTrain);
  EXPECT_EQ(cfg.trainTransform, image::parseTransformKind(old.at("train_transform")));
  EXPECT_EQ(cfg.sampler, data::SamplerKind::kRepeatedAug);
}

TEST(RunConfigTest, ReadsTheFinetuneConfigOfVersion010) {
  auto old = readJson("config-0.1.0-finetune.json");
  expectReadsBack(old);
  auto cfg = RunConfig::fromJson(old);
  EXPECT_EQ(cfg.mode, RunMode::kFinetune);
  EXPECT_EQ(cfg.trainTransform, image::TransformKind::kVal);
  EXPECT_EQ(cfg.sampler, data::SamplerKind::kDistributed);
}

TEST(RunConfigTest, EveryChoiceRoundTrips) {
  auto c = RunConfig::forMode(RunMode::kFinetune);
  c.trainTransform = image::TransformKind::kV2Train;
  c.resizeMode = image::ResizeMode::kShorter;
  c.sampler = data::SamplerKind::kRepeatedAug;
  c.schedule.kind = ScheduleKind::kCosine;
  c.numerics.precision = PrecisionChoice::kBf16;
  c.numerics.memoryFormat = MemoryFormatChoice::kChannelsLast;
  c.numerics.normalizeOn = NormalizeOnChoice::kDevice;
  auto j = c.toJson();
  EXPECT_EQ(j["train_transform"], "v2-train");
  EXPECT_EQ(j["resize_mode"], "shorter");
  EXPECT_EQ(j["lr_schedule"], "cosine");
  EXPECT_EQ(j["memory_format"], "channels-last");
  EXPECT_EQ(RunConfig::fromJson(j).toJson(), j);
}

TEST(RunConfigTest, AliasesReadAsTheirCanonicalValue) {
  auto j = RunConfig::forMode(RunMode::kTrain).toJson();
  j["train_transform"] = "val_train";  // the reference's spelling
  EXPECT_EQ(RunConfig::fromJson(j).trainTransform, image::TransformKind::kV2Train);
}

TEST(RunConfigTest, BadValuesNameTheKey) {
  auto j = RunConfig::forMode(RunMode::kTrain).toJson();
  j["sampler"] = "bogus";
  try {
    RunConfig::fromJson(j);
    FAIL() << "accepted sampler 'bogus'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'sampler'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
  }
  j = RunConfig::forMode(RunMode::kTrain).toJson();
  j["batch"] = "sixty-four";
  EXPECT_THROW(RunConfig::fromJson(j), UsageError);
  // Integers out of their field's range, as numbers: refused naming the key, never converted
  // (4e68 into an int64 was undefined behaviour, found by the modelfolder fuzz target; 2^32 + 24
  // into an int wrapped to 24).
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"model_ema_steps", 4e68},
                                                           {"batch", 4294967320ULL},
                                                           {"epochs", -1e300},
                                                           {"lr_step", 2.5},
                                                           {"seed", -1}}) {
    j = RunConfig::forMode(RunMode::kTrain).toJson();
    j[key] = value;
    try {
      RunConfig::fromJson(j);
      ADD_FAILURE() << "accepted " << key << " = " << value.dump();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
    }
  }
  j = RunConfig::forMode(RunMode::kTrain).toJson();
  j["batch"] = 32.0;  // an integer written as a float is that integer
  EXPECT_EQ(RunConfig::fromJson(j).batch, 32);
}

TEST(RunConfigTest, FinetuneRecipeDefaultsAreTheReferences) {
  auto c = RunConfig::forMode(RunMode::kFinetune);
  // main_finetune.py of the reference: test resolution 384, 56 epochs, lr 1e-3, the val
  // transform for training, DistributedSampler.
  EXPECT_EQ(c.inputSize, 384);
  EXPECT_EQ(c.epochs, 56);
  EXPECT_DOUBLE_EQ(c.learningRate, 1e-3);
  EXPECT_EQ(c.trainTransform, image::TransformKind::kVal);
  EXPECT_EQ(c.sampler, data::SamplerKind::kDistributed);
  auto t = RunConfig::forMode(RunMode::kTrain);
  EXPECT_EQ(t.inputSize, 224);
  EXPECT_EQ(t.epochs, 120);
  EXPECT_DOUBLE_EQ(t.learningRate, 0.02);
  EXPECT_EQ(t.trainTransform, image::TransformKind::kFull);
}

// Each bad value is refused with a UsageError naming its flag (the CLI runs the same checks while
// parsing: exit 2 before any file is opened).
TEST(RunConfigTest, EveryNumericValueIsCheckedAndTheMessageNamesTheFlag) {
  const std::vector<std::pair<std::string, std::function<void(RunConfig&)>>> cases = {
      {"--log-every", [](RunConfig& c) { c.logEvery = 0; }},
      {"--log-every", [](RunConfig& c) { c.logEvery = -3; }},
      {"--learning-rate", [](RunConfig& c) { c.learningRate = INFINITY; }},
      {"--learning-rate", [](RunConfig& c) { c.learningRate = NAN; }},
      {"--learning-rate", [](RunConfig& c) { c.learningRate = 0; }},
      {"--learning-rate", [](RunConfig& c) { c.learningRate = -0.1; }},
      {"--momentum", [](RunConfig& c) { c.step.momentum = 1; }},
      {"--momentum", [](RunConfig& c) { c.step.momentum = NAN; }},
      {"--weight-decay", [](RunConfig& c) { c.step.weightDecay = INFINITY; }},
      {"--weight-decay", [](RunConfig& c) { c.step.weightDecay = -1e-4; }},
      {"--label-smoothing", [](RunConfig& c) { c.step.labelSmoothing = 1; }},
      {"--label-smoothing", [](RunConfig& c) { c.step.labelSmoothing = NAN; }},
      {"--warmup-epochs", [](RunConfig& c) { c.schedule.warmupEpochs = INFINITY; }},
      {"--warmup-epochs", [](RunConfig& c) { c.schedule.warmupEpochs = -1; }},
      {"--lr-gamma", [](RunConfig& c) { c.schedule.gamma = 0; }},
      {"--lr-gamma", [](RunConfig& c) { c.schedule.gamma = -INFINITY; }},
      {"--lr-step", [](RunConfig& c) { c.schedule.stepEpochs = 0; }},
      {"--eval-every", [](RunConfig& c) { c.evalEvery = 0; }},
      {"--epochs", [](RunConfig& c) { c.epochs = 0; }},
      {"--batch", [](RunConfig& c) { c.batch = -1; }},
      {"--accumulation-steps", [](RunConfig& c) { c.accumulationSteps = 0; }},
      {"--repetitions", [](RunConfig& c) { c.repetitions = 0; }},
      {"--repetitions", [](RunConfig& c) { c.repetitions = 1000000; }},
      {"--iteration-cap", [](RunConfig& c) { c.iterationCap = 0; }},
      {"--iteration-cap", [](RunConfig& c) { c.iterationCap = -2; }},
      {"--stop-after-steps", [](RunConfig& c) { c.stopAfterSteps = 0; }},
      {"--stop-after-steps", [](RunConfig& c) { c.stopAfterSteps = -5; }},
      {"--checkpoint-every-steps", [](RunConfig& c) { c.checkpointEverySteps = -1; }},
      {"--num-classes", [](RunConfig& c) { c.model.numClasses = -1; }},
      {"--input-size", [](RunConfig& c) { c.inputSize = 4; }},
      {"--eval-size", [](RunConfig& c) { c.evalSize = 5; }},
      {"--model-ema-decay", [](RunConfig& c) { c.ema.decay = 1.5; }},
      {"--model-ema-decay", [](RunConfig& c) { c.ema.decay = NAN; }},
      {"--model-ema-steps", [](RunConfig& c) { c.ema.steps = 0; }},
      {"--mixup-alpha", [](RunConfig& c) { c.mix.mixupAlpha = -0.2; }},
      {"--mixup-alpha", [](RunConfig& c) { c.mix.mixupAlpha = INFINITY; }},
      {"--cutmix-alpha", [](RunConfig& c) { c.mix.cutmixAlpha = NAN; }},
  };
  for (auto mode : {RunMode::kTrain, RunMode::kFinetune}) {
    RunConfig good = RunConfig::forMode(mode);
    EXPECT_NO_THROW(good.validateValues());
    for (const auto& [flag, spoil] : cases) {
      RunConfig c = good;
      spoil(c);
      try {
        c.validateValues();
        ADD_FAILURE() << flag << ": a bad value was accepted";
      } catch (const UsageError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(flag + " ", 0), 0u) << e.what();
      }
    }
  }
  // -1 is "none" where it has a meaning; the edges of the ranges are accepted.
  RunConfig c = RunConfig::forMode(RunMode::kTrain);
  c.iterationCap = 1;
  c.stopAfterSteps = 1;
  c.checkpointEverySteps = 0;
  c.logEvery = 1;
  c.step.momentum = 0;
  c.step.weightDecay = 0;
  c.model.numClasses = 1;
  EXPECT_NO_THROW(c.validateValues());
}

TEST(RunConfigTest, EmaAndMixingSettingsRoundTripAndDefaultToTheReferences) {
  auto c = RunConfig::forMode(RunMode::kTrain);
  // torchvision references' defaults: --model-ema-decay 0.99998, --model-ema-steps 32, off.
  EXPECT_FALSE(c.ema.enabled);
  EXPECT_EQ(c.ema.decay, 0.99998);
  EXPECT_EQ(c.ema.steps, 32);
  EXPECT_EQ(c.mix.mixupAlpha, 0);
  EXPECT_EQ(c.mix.cutmixAlpha, 0);
  c.ema.enabled = true;
  c.ema.decay = 0.999;
  c.ema.steps = 4;
  c.mix.mixupAlpha = 0.2;
  c.mix.cutmixAlpha = 1.0;
  c.model.useEma = true;
  const auto j = c.toJson();
  EXPECT_EQ(j.at("model_ema"), true);
  EXPECT_EQ(j.at("model_ema_decay"), 0.999);
  EXPECT_EQ(j.at("model_ema_steps"), 4);
  EXPECT_EQ(j.at("mixup_alpha"), 0.2);
  EXPECT_EQ(j.at("cutmix_alpha"), 1.0);
  EXPECT_EQ(j.at("use_ema"), true);
  EXPECT_EQ(RunConfig::fromJson(j).toJson(), j);
  // Changing them on resume is allowed (noted, not refused).
  auto before = RunConfig::forMode(RunMode::kTrain).toJson();
  for (const auto& change : resumeChanges(before, c)) EXPECT_FALSE(change.definesRun) << change.key;
}

TEST(RunConfigTest, NanPolicyIsAChoiceInConfigJson) {
  auto c = RunConfig::forMode(RunMode::kTrain);
  EXPECT_EQ(c.toJson()["nan_policy"], "stop");
  c.nanPolicy = NanPolicy::kSkip;
  c.allowConfigChange = true;
  auto j = c.toJson();
  EXPECT_EQ(j["nan_policy"], "skip");
  EXPECT_FALSE(j.contains("allow_config_change"));  // a choice of one invocation
  EXPECT_EQ(RunConfig::fromJson(j).nanPolicy, NanPolicy::kSkip);
  j["nan_policy"] = "ignore";
  EXPECT_THROW(RunConfig::fromJson(j), UsageError);
}

std::string describe(const std::vector<ConfigChange>& changes) {
  std::string s;
  for (const auto& c : changes)
    s += c.key + ":" + c.before + "->" + c.after + (c.definesRun ? "!" : "") + " ";
  return s;
}

TEST(RunConfigTest, ResumeChangesSayWhichSettingsDefineTheRun) {
  auto started = RunConfig::forMode(RunMode::kTrain);
  started.trainPath = "/data/a/train";
  started.runDir = "runs/train/1";
  auto same = started;
  same.stopAfterSteps = 7;  // per invocation: never compared
  same.checkpointEverySteps = 2;
  same.runDir = "/abs/runs/1";  // the same folder reached another way
  same.allowConfigChange = true;
  EXPECT_EQ(describe(resumeChanges(started.toJson(), same)), "");

  auto other = started;
  other.batch = 8;
  other.inputSize = 160;
  other.seed = 4;
  other.accumulationSteps = 2;
  other.trainTransform = image::TransformKind::kVal;
  other.model.architecture = "resnet18";
  other.model.numClasses = 10;
  other.trainPath = "/data/b/train";
  other.sampler = data::SamplerKind::kDistributed;
  other.repetitions = 2;
  other.iterationCap = 5;
  other.learningRate = 0.5;
  other.epochs = 200;
  EXPECT_EQ(describe(resumeChanges(started.toJson(), other)),
            "accumulation_steps:1->2! architecture:\"ResNet50\"->\"resnet18\"! batch:64->8! "
            "epochs:120->200 input_size:224->160! iteration_cap:-1->5! learning_rate:0.02->0.5 "
            "num_classes:0->10! repetitions:3->2! sampler:\"ra\"->\"distributed\"! seed:0->4! "
            "train_path:\"/data/a/train\"->\"/data/b/train\"! train_transform:\"full\"->\"val\"! ");
}

// A shard run's config from before the reader chose its sampler holds --sampler's value ("ra"):
// resuming it with the shard sampler (what such data always used) is noted, not refused; any
// other sampler change still defines the run.
TEST(RunConfigTest, ResumeNotesTheShardSamplerOfOlderShardRuns) {
  auto started = RunConfig::forMode(RunMode::kTrain);
  started.trainPath = "/data/shards/train";
  started.runDir = "runs/train/1";
  auto now = started;
  now.sampler = data::SamplerKind::kShard;
  EXPECT_EQ(describe(resumeChanges(started.toJson(), now)), "sampler:\"ra\"->\"shard\" ");
  EXPECT_EQ(describe(resumeChanges(now.toJson(), now)), "");
  EXPECT_EQ(describe(resumeChanges(now.toJson(), started)), "sampler:\"shard\"->\"ra\"! ");
  EXPECT_EQ(now.toJson()["sampler"], "shard");
  EXPECT_EQ(RunConfig::fromJson(now.toJson()).sampler, data::SamplerKind::kShard);
}

TEST(RunConfigTest, ResumeChangesCompareOnlyWhatAnOlderConfigHolds) {
  auto old = readJson("config-0.1.0-train.json");
  auto now = RunConfig::fromJson(old);
  EXPECT_TRUE(resumeChanges(old, now).empty());
  now.nanPolicy = NanPolicy::kSkip;  // a key 0.1.0 did not have
  EXPECT_TRUE(resumeChanges(old, now).empty());
  now.batch += 1;
  auto changes = resumeChanges(old, now);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key, "batch");
  EXPECT_TRUE(changes[0].definesRun);
}

// The optimizer keys: opt by name, the group decays as numbers or null (unset: the same as
// weight_decay), clip_grad_norm, precision fp16; a config without them (0.1.0) reads as SGD with
// one group; another opt on resume defines another run, another clip_grad_norm does not.
TEST(RunConfigTest, OptimizerKeysRoundTripAndOptDefinesTheRun) {
  RunConfig c = RunConfig::forMode(RunMode::kTrain);
  const auto plain = c.toJson();
  EXPECT_EQ(plain.at("opt"), "sgd");
  EXPECT_TRUE(plain.at("norm_weight_decay").is_null());
  EXPECT_TRUE(plain.at("bias_weight_decay").is_null());
  EXPECT_EQ(plain.at("clip_grad_norm"), 0.0);
  c.step.optimizer = optim::optimizerNamed("adamw");
  c.step.normWeightDecay = 0.0;
  c.step.clipGradNorm = 1.5;
  c.numerics.precision = PrecisionChoice::kFp16;
  const auto j = c.toJson();
  EXPECT_EQ(j.at("opt"), "adamw");
  EXPECT_EQ(j.at("norm_weight_decay"), 0.0);
  EXPECT_TRUE(j.at("bias_weight_decay").is_null());
  EXPECT_EQ(j.at("precision"), "fp16");
  const RunConfig back = RunConfig::fromJson(j);
  EXPECT_EQ(back.step.optimizer, optim::optimizerNamed("adamw"));
  EXPECT_EQ(back.step.normWeightDecay, std::optional<double>(0.0));
  EXPECT_FALSE(back.step.biasWeightDecay.has_value());
  EXPECT_EQ(back.step.clipGradNorm, 1.5);
  EXPECT_EQ(back.toJson(), j);
  const RunConfig old = RunConfig::fromJson(readJson("config-0.1.0-train.json"));
  EXPECT_EQ(old.step.optimizer, optim::optimizerNamed("sgd"));
  EXPECT_FALSE(old.step.normWeightDecay.has_value());
  EXPECT_THROW(RunConfig::fromJson({{"opt", "lion"}}), UsageError);
  RunConfig other = back;
  other.step.optimizer = optim::optimizerNamed("rmsprop");
  other.step.clipGradNorm = 2;
  std::string seen;
  for (const auto& change : resumeChanges(j, other))
    seen += change.key + (change.definesRun ? "! " : " ");
  EXPECT_EQ(seen, "clip_grad_norm opt! ");
  RunConfig bad = RunConfig::forMode(RunMode::kTrain);
  bad.step.biasWeightDecay = -1.0;
  EXPECT_THROW(bad.validateValues(), UsageError);
}

}  // namespace
}  // namespace fixres::engine

namespace fixres::engine {
namespace {

// The augmentation settings: keys auto_augment, ra_magnitude, augmix_severity, random_erase;
// a config.json without them (0.1.0 and every file before them) reads as no augmentation.
TEST(RunConfigTest, AugmentationSettingsRoundTripAndDefaultToOff) {
  const RunConfig old = RunConfig::fromJson(readJson("config-0.1.0-train.json"));
  EXPECT_EQ(old.autoAugment, image::AutoAugmentKind::kNone);
  EXPECT_EQ(old.raMagnitude, 9);
  EXPECT_EQ(old.augmixSeverity, 3);
  EXPECT_EQ(old.randomErase, 0.0);
  RunConfig c = RunConfig::forMode(RunMode::kTrain);
  c.autoAugment = image::AutoAugmentKind::kTrivialAugmentWide;
  c.raMagnitude = 12;
  c.augmixSeverity = 5;
  c.randomErase = 0.25;
  const nlohmann::json j = c.toJson();
  EXPECT_EQ(j.at("auto_augment"), "ta_wide");
  const RunConfig back = RunConfig::fromJson(j);
  EXPECT_EQ(back.autoAugment, c.autoAugment);
  EXPECT_EQ(back.raMagnitude, 12);
  EXPECT_EQ(back.augmixSeverity, 5);
  EXPECT_EQ(back.randomErase, 0.25);
  // Changing the policy on resume changes what the run is.
  RunConfig other = back;
  other.autoAugment = image::AutoAugmentKind::kAugMix;
  const auto changes = resumeChanges(j, other);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key, "auto_augment");
  EXPECT_TRUE(changes[0].definesRun);
}

TEST(RunConfigTest, AugmentationValuesAreCheckedNamingTheFlag) {
  auto message = [](const std::function<void(RunConfig&)>& edit) {
    RunConfig c = RunConfig::forMode(RunMode::kTrain);
    edit(c);
    try {
      c.validateValues();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([](RunConfig& c) { c.raMagnitude = 31; }).find("--ra-magnitude"),
            std::string::npos);
  EXPECT_NE(message([](RunConfig& c) { c.augmixSeverity = 11; }).find("--augmix-severity"),
            std::string::npos);
  EXPECT_NE(message([](RunConfig& c) { c.randomErase = -0.1; }).find("--random-erase"),
            std::string::npos);
  EXPECT_NE(message([](RunConfig& c) {
              c.trainTransform = image::TransformKind::kVal;
              c.autoAugment = image::AutoAugmentKind::kRandAugment;
            }).find("--auto-augment ra needs --transform"),
            std::string::npos);
  EXPECT_EQ(message([](RunConfig& c) { c.autoAugment = image::AutoAugmentKind::kImageNet; }), "");
}

}  // namespace
}  // namespace fixres::engine
