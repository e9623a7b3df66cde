// Every numeric flag of eval, extract, sweep, suggest-resolution, bench and the cluster group is
// checked while parsing, for range and finiteness: a bad value is a CLI11 ValidationError (exit
// 2) naming the flag and the valid range, whichever subcommand declares it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixres/cli/Command.h"

namespace fixres::cli {
namespace {

struct Case {
  std::string command;  // the subcommand and its required flags
  std::string flag;
  std::vector<std::string> bad;
  std::string good;
  std::string says;  // in the message
};

const std::vector<Case>& cases() {
  static const std::string eval = "eval --weight-path w --dataset-path d";
  static const std::string sweep = "sweep --weight-path w --imnet-path d";
  static const std::string suggest = "suggest-resolution";
  static const std::vector<Case> all = {
      {eval, "--batch", {"0", "-3", "1.5", "abc", "99999999999"}, "8", "[1, 1048576]"},
      {eval, "--workers", {"0", "100000", "-1"}, "1", "[1, 1024]"},
      {eval, "--input-size", {"4", "5000", "224,", "224,x", "nan"}, "224,288", "[8, 4096]"},
      {eval, "--num-classes", {"-1", "1000001"}, "0", "[0, 1000000]"},
      {eval, "--limit", {"0", "-2"}, "-1", "an integer >= 1 (or -1: all)"},
      {eval, "--dist-timeout", {"0", "-1", "nan", "inf", "1e309"}, "2.5", "(0, 604800]"},
      {eval, "--num-tasks", {"0", "-1"}, "2", "[1, 65536]"},
      {eval, "--global-rank", {"-1"}, "0", "[0, 65535]"},
      {eval, "--local-rank", {"-1"}, "0", "[0, 65535]"},
      {"extract --dataset-path d --save-path s", "--input-size", {"0"}, "64", "[8, 4096]"},
      {sweep, "--finetune-epochs", {"0", "-1"}, "2", "--finetune-epochs: must be"},
      {sweep, "--finetune-iterations", {"0", "-5"}, "10", "(or -1: all)"},
      {sweep, "--finetune-lr", {"0", "-1", "nan", "inf"}, "0.01", "(0, 1000]"},
      {sweep, "--train-size", {"2000000000", "0"}, "224", "[8, 4096]"},
      {suggest, "--train-size", {"2000000000", "-224"}, "224", "[8, 4096]"},
      {suggest, "--multiple", {"0", "-8"}, "32", "[1, 4096]"},
      {suggest, "--scale-min", {"0", "1.5", "nan"}, "0.25", "(0, 1]"},
      {suggest, "--scale-max", {"-1", "inf"}, "0.9", "(0, 1]"},
      {suggest, "--crop-ratio", {"0", "2", "nan"}, "0.875", "(0, 1]"},
      {"bench eval", "--steps", {"0"}, "3", "[1, 1000000]"},
      {"bench eval", "--warmup", {"-1"}, "0", "[0, 1000000]"},
      {"bench eval", "--batch", {"0"}, "2", "[1, 1048576]"},
      {"bench allreduce", "--iters", {"0"}, "2", "[1, 1000000]"},
      {"bench allreduce",
       "--bucket-mb",
       {"0", "nan", "2000", "1e-45"},
       "25",
       "[9.5367431640625e-07, 1024]"},
      {"train --imnet-path d",
       "--bucket-mb",
       {"0", "-1", "inf", "9e-7"},
       "25",
       "[9.5367431640625e-07, 1024]"},
      {"bench data --dataset-path d", "--seconds", {"-1", "inf"}, "0", "[0, 86400]"},
      {"bench data --dataset-path d", "--workers", {"0"}, "2", "[1, 1024]"},
  };
  return all;
}

TEST(FlagRange, BadValuesAreRefusedWhileParsingNamingTheFlagAndRange) {
  for (const Case& c : cases()) {
    for (const std::string& v : c.bad) {
      SCOPED_TRACE(c.command + " " + c.flag + " " + v);
      CLI::App app{"fixres", "fixres"};
      GlobalOptions global;
      auto commands = buildCli(app, global);
      try {
        app.parse(c.command + " " + c.flag + "=" + v, false);
        ADD_FAILURE() << "accepted";
      } catch (const CLI::ParseError& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(c.flag + ": ", 0), 0u) << msg;
        EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
        EXPECT_NE(msg.find("got '" + v + "'"), std::string::npos) << msg;
      }
    }
    SCOPED_TRACE(c.command + " " + c.flag + " " + c.good);
    CLI::App app{"fixres", "fixres"};
    GlobalOptions global;
    auto commands = buildCli(app, global);
    EXPECT_NO_THROW(app.parse(c.command + " " + c.flag + "=" + c.good, false));
  }
}

TEST(FlagRange, TheGlobalThreadsFlagIsChecked) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  EXPECT_THROW(app.parse("--threads 5000 version", false), CLI::ValidationError);
}

// The rule is EvalRequest::validate's, run before anything is read or written: the whole command
// line through runCli exits 2 with one line naming both flags.
TEST(FlagRange, EvalTakesOneDataFlag) {
  std::vector<std::string> args = {"fixres",       "eval", "--weight-path",  "w",
                                   "--imnet-path", "a",    "--dataset-path", "b"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const int code = runCli(static_cast<int>(argv.size()), argv.data());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--imnet-path excludes --dataset-path"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace fixres::cli
