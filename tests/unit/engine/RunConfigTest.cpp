// RunConfig's JSON form: config.json files written by fixres 0.1.0 before the options became
// typed (tests/unit/engine/data/config-0.1.0-*.json, written by that version's `fixres train`
// and `fixres finetune`) still read, and every choice goes through its name table both ways.
#include <gtest/gtest.h>

#include <fstream>
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
  c.lrSchedule = ScheduleKind::kCosine;
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

}  // namespace
}  // namespace fixres::engine
