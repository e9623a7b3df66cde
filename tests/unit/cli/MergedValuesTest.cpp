// What the values imply together is checked on the values the command line and --config merge
// into, whatever each one's source, while parsing (exit 2, before any file is written): the
// cross-checks of a run's settings, --pretrained against --architecture, the learning rate the
// optimizer is given; and the one check of the output path flags.
#include <gtest/gtest.h>

#include <cfloat>
#include <fstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/common/Error.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::cli {
namespace {

class MergedValuesTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir("fixres_merged_"); }
  std::string file(const std::string& text) {
    const std::string path = dir_ + "/cfg.toml";
    std::ofstream(path) << text;
    return path;
  }
  // The ParseError message of `fixres <line>` ("" when it parses).
  std::string refusal(const std::string& line) {
    CLI::App app{"fixres", "fixres"};
    GlobalOptions global;
    auto commands = buildCli(app, global);
    try {
      app.parse(line, false);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
  // The same with `args` as argv (an empty argument kept).
  std::string refusal(std::vector<std::string> args) {
    CLI::App app{"fixres", "fixres"};
    GlobalOptions global;
    auto commands = buildCli(app, global);
    args.insert(args.begin(), "fixres");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --nesterov needs --momentum > 0, whichever of them the file sets: refused naming the file.
TEST_F(MergedValuesTest, CrossChecksSeeTheFilesValues) {
  const std::string run = "train --imnet-path d ";
  std::string e = refusal(run + "--nesterov --config " + file("momentum = 0\n"));
  EXPECT_TRUE(
      has(e, "cfg.toml: momentum = 0: --nesterov needs --opt sgd or lars and --momentum > 0"))
      << e;
  e = refusal(run + "--momentum 0 --config " + file("nesterov = true\n"));
  EXPECT_TRUE(has(e, "cfg.toml: nesterov = true: --nesterov needs")) << e;
  // finetune's transform is val: RandAugment needs a train transform.
  e = refusal("finetune --imnet-path d --weight-path w --config " +
              file("auto-augment = \"ra\"\n"));
  EXPECT_TRUE(has(e, "cfg.toml: auto-augment = ra: --auto-augment ra needs --transform")) << e;
  // Both on the command line: the same refusal, no file named.
  e = refusal(run + "--nesterov --momentum 0");
  EXPECT_EQ(e.rfind("--nesterov needs --opt sgd or lars and --momentum > 0", 0), 0u) << e;
}

// --pretrained against --architecture on the merged values: every mix of sources is refused,
// naming the architecture given (not the default).
TEST_F(MergedValuesTest, PretrainedAndArchitectureAgreeFromEverySource) {
  for (const std::string command : {"train --imnet-path d", "finetune --imnet-path d", "eval",
                                    "export --out o.pth", "calibrate --dataset-path d --out o"}) {
    SCOPED_TRACE(command);
    const std::vector<std::pair<std::string, std::string>> mixes = {
        {"--architecture resnet_tiny --config " + file("pretrained = \"FixResNet50\"\n"),
         "pretrained = FixResNet50"},
        {"--pretrained FixResNet50 --config " + file("architecture = \"resnet_tiny\"\n"),
         "architecture = resnet_tiny"},
        {"--config " + file("architecture = \"resnet_tiny\"\npretrained = \"FixResNet50\"\n"),
         "pretrained = FixResNet50"},
        {"--pretrained FixResNet50 --architecture resnet_tiny", ""}};
    for (const auto& [args, key] : mixes) {
      const std::string e = refusal(command + " " + args);
      EXPECT_TRUE(has(e, "FixResNet50 is a ResNet50, not --architecture resnet_tiny")) << e;
      if (!key.empty()) EXPECT_TRUE(has(e, "cfg.toml: " + key + ": --pretrained")) << e;
    }
    const std::string e = refusal(command + " --architecture resnet_tiny --config " +
                                  file("pretrained = \"FixPNASNet\"\n"));
    EXPECT_TRUE(has(e, "FixPNASNet is a PNASNet, not --architecture resnet_tiny")) << e;
    // Agreeing sources are accepted.
    EXPECT_EQ(refusal(command + " --architecture ResNet50 --config " +
                      file("pretrained = \"FixResNet50\"\n")),
              "");
  }
}

// The rate the optimizer holds is float32: a learning rate that is (or scales to) more than the
// largest float32 is refused while parsing, from the command line or the file.
TEST_F(MergedValuesTest, TheOptimizersRateIsAFiniteFloat32) {
  const std::string run = "train --imnet-path d ";
  std::string e = refusal(run + "--learning-rate 1e300 --absolute-lr");
  EXPECT_EQ(e.rfind("--learning-rate 1e+300 (--absolute-lr) gives the optimizer a rate of", 0), 0u)
      << e;
  EXPECT_TRUE(has(e, "largest float32")) << e;
  e = refusal("finetune --imnet-path d --weight-path w --config " +
              file("learning-rate = 1e300\nabsolute-lr = true\n"));
  EXPECT_TRUE(has(e, "cfg.toml: learning-rate = 1e300: --learning-rate")) << e;
  // 8 x 1e37 x 64 / 512 = 1e37 fits; 8 x 1e38 x 1024 / 512 does not.
  EXPECT_EQ(refusal(run + "--learning-rate 1e37"), "");
  EXPECT_TRUE(has(refusal(run + "--learning-rate 1e38 --batch 1024"), "largest float32"));
  // StepLR growing past it over the epochs (--lr-gamma > 1).
  EXPECT_TRUE(has(refusal(run + "--learning-rate 1 --lr-gamma 1e10 --epochs 150 --lr-step 30"),
                  "rates up to"));
  // The world's size scales it further: the run checks again once it knows it.
  auto c = engine::RunConfig::forMode(engine::RunMode::kTrain);
  c.learningRate = 1e36;  // x 8 x 64 / 512 = 1e36 per process
  EXPECT_NO_THROW(c.checkLearningRate(1));
  EXPECT_THROW(c.checkLearningRate(1000), UsageError);
  EXPECT_DOUBLE_EQ(c.effectiveLearningRate(2), 2e36);
  c.absoluteLr = true;
  EXPECT_DOUBLE_EQ(c.effectiveLearningRate(2), 1e36);
  c.learningRate = FLT_MAX;
  EXPECT_NO_THROW(c.checkLearningRate(1000));
}

// Every output path flag: empty is refused naming the flag, from the command line or the file.
TEST_F(MergedValuesTest, OutputPathsAreNeverEmpty) {
  const std::vector<std::vector<std::string>> lines = {
      {"shard", "--dataset-path", "d", "--out", ""},
      {"export", "--weight-path", "w", "--out", ""},
      {"import", "--out", ""},
      {"calibrate", "--weight-path", "w", "--dataset-path", "d", "--out", ""},
      {"plot", "run", "--out", ""},
      {"sweep", "--weight-path", "w", "--imnet-path", "d", "--out", ""},
      {"extract", "--weight-path", "w", "--dataset-path", "d", "--save-path", ""},
      {"eval", "--weight-path", "w", "--dataset-path", "d", "--json", ""}};
  for (const auto& line : lines) {
    const std::string flag = line[line.size() - 2];
    const std::string e = refusal(line);
    EXPECT_EQ(e.rfind(flag + ": must not be empty", 0), 0u) << line[0] << ": " << e;
  }
  const std::string e = refusal("export --weight-path w --config " + file("out = \"\"\n"));
  EXPECT_TRUE(has(e, "cfg.toml: out = : --out: must not be empty")) << e;
}

// An output inside an input, or an input inside the output, is refused naming both.
TEST_F(MergedValuesTest, OutputsAndInputsDoNotNest) {
  const std::string ds = dir_ + "/ds";
  EXPECT_NO_THROW(checkOutputPath("--out", dir_ + "/shards", {{"--dataset-path", ds}}));
  EXPECT_NO_THROW(checkOutputPath("--out", ds + "-shards", {{"--dataset-path", ds}}));
  try {
    checkOutputPath("--out", ds + "/train/new", {{"--dataset-path", ds}});
    ADD_FAILURE() << "an output inside the dataset was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--out " + ds + "/train/new is inside --dataset-path " + ds +
                                         ": an output must not be written into an input");
  }
  try {
    checkOutputPath("--out", dir_, {{"--dataset-path", ds + "/train"}});
    ADD_FAILURE() << "an output holding the dataset was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "--dataset-path " + ds + "/train is inside --out " + dir_))
        << e.what();
  }
  EXPECT_THROW(checkOutputPath("--out", ds + "/", {{"--dataset-path", ds}}), UsageError);
  EXPECT_THROW(checkOutputPath("--out", ds, {{"--dataset-path", ds + "/./"}}), UsageError);
  EXPECT_THROW(checkOutputPath("--out", ""), UsageError);
}

}  // namespace
}  // namespace fixres::cli
