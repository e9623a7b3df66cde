// Every numeric and choice flag of train and finetune refuses a bad value before any work: exit 2,
// one stderr line "fixres: error: ..." naming the flag, and no run folder made. Through runCli,
// the whole command line as the binary takes it, in this process: one case costs microseconds
// here and a LibTorch start (about 0.7 s of CPU) as a process of its own.
// tests/integration/train_loop_test.sh keeps two of them through the binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "../Reference.h"
#include "fixres/cli/Command.h"

namespace fixres::cli {
namespace {

// flag, value: what the training commands must refuse.
const std::vector<std::pair<std::string, std::string>>& badValues() {
  static const std::vector<std::pair<std::string, std::string>> kBad = {
      {"--log-every", "0"},
      {"--log-every", "-1"},
      {"--learning-rate", "inf"},
      {"--learning-rate", "nan"},
      {"--learning-rate", "-0.1"},
      {"--learning-rate", "0"},
      {"--momentum", "1"},
      {"--momentum", "nan"},
      {"--weight-decay", "inf"},
      {"--weight-decay", "-1"},
      {"--label-smoothing", "1"},
      {"--warmup-epochs", "-inf"},
      {"--lr-gamma", "0"},
      {"--lr-step", "0"},
      {"--eval-every", "0"},
      {"--epochs", "0"},
      {"--accumulation-steps", "0"},
      {"--repetitions", "0"},
      {"--iteration-cap", "0"},
      {"--iteration-cap", "-7"},
      {"--stop-after-steps", "0"},
      {"--num-classes", "-1"},
      {"--seed", "-1"},
      {"--seed", "-18446744073709551615"},
      {"--nan-policy", "ignore"},
      {"--skip-on", "sideways"},
      {"--cuda-graph", "maybe"},
      {"--decode-on", "tpu"},
      // optimizers (tests/integration/optim_test.sh)
      {"--opt", "lion"},
      {"--norm-weight-decay", "-1"},
      {"--norm-weight-decay", "nan"},
      {"--bias-weight-decay", "inf"},
      {"--bias-weight-decay", "-0.5"},
      {"--clip-grad-norm", "-1"},
      {"--clip-grad-norm", "nan"},
  };
  return kBad;
}

// What train alone takes: EMA and mixup / CutMix (tests/integration/ema_mix_test.sh).
const std::vector<std::pair<std::string, std::string>>& badTrainValues() {
  static const std::vector<std::pair<std::string, std::string>> kBad = {
      {"--model-ema-decay", "1.5"}, {"--model-ema-decay", "nan"}, {"--model-ema-decay", "-0.1"},
      {"--model-ema-steps", "0"},   {"--mixup-alpha", "-1"},      {"--mixup-alpha", "inf"},
      {"--cutmix-alpha", "-0.5"},   {"--cutmix-alpha", "nan"},
  };
  return kBad;
}

// runCli on `args` (argv[0] added): its exit code and what it wrote to stderr.
std::pair<int, std::string> runCaptured(std::vector<std::string> args) {
  args.insert(args.begin(), "fixres");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const int code = runCli(static_cast<int>(argv.size()), argv.data());
  return {code, ::testing::internal::GetCapturedStderr()};
}

TEST(TrainingFlagValues, BadValuesExitTwoNamingTheFlagBeforeAnyWork) {
  const std::string dir = fixres::testing::makeTempDir("fixres_flag_values_");
  const std::string runs = dir + "/runs";
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cases;
  for (const std::string sub : {"train", "finetune"})
    for (const auto& bad : badValues()) cases.push_back({sub, bad});
  for (const auto& bad : badTrainValues()) cases.push_back({"train", bad});
  for (const auto& [sub, bad] : cases) {
    const auto& [flag, value] = bad;
    SCOPED_TRACE(sub + " " + flag + " " + value);
    const auto [code, err] =
        runCaptured({sub, "--imnet-path", dir + "/data", "--weight-path", dir + "/none.pth",
                     "--shared-folder-path", runs, "--job-id", "badflag", flag, value});
    EXPECT_EQ(code, 2);
    EXPECT_EQ(err.rfind("fixres: error: ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(flag), std::string::npos) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(runs)) << "a refused command wrote " << runs;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fixres::cli
