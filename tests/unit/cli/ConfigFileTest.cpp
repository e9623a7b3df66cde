// --config FILE: a subcommand's options from a TOML or INI file, the command line winning, and
// every mistake in the file (missing, unknown key or section, bad value) refused while parsing
// with the file and the key named.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/cli/Command.h"

namespace fixres::cli {
namespace {

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::makeTempDir("fixres_config_");
    commands_ = buildCli(app_, global_);
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // Parses `args` (argv[0] first), as runCli does.
  void parse(std::vector<std::string> args) {
    args.insert(args.begin(), "fixres");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app_.parse(static_cast<int>(argv.size()), argv.data());
  }
  // The ParseError message of parsing `args` ("" when it parses).
  std::string refusal(const std::vector<std::string>& args) {
    try {
      parse(args);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
  template <typename T>
  T value(const std::string& sub, const std::string& flag) {
    return app_.get_subcommand(sub)->get_option(flag)->as<T>();
  }

  std::string dir_;
  CLI::App app_{"fixres", "fixres"};
  GlobalOptions global_;
  std::vector<Command> commands_;
};

TEST_F(ConfigFileTest, TomlSetsTheSubcommandsOptions) {
  const auto cfg = file("eval.toml",
                        "# eval settings\n"
                        "weight-path = \"w.pth\"\n"
                        "dataset-path = 'data/val'\n"
                        "input-size = \"224,288\"\n"
                        "batch = 12\n"
                        "test-flip = true\n"
                        "resize-mode = \"shorter\"\n");
  parse({"eval", "--config", cfg});
  EXPECT_EQ(value<std::string>("eval", "--weight-path"), "w.pth");
  EXPECT_EQ(value<std::string>("eval", "--dataset-path"), "data/val");
  EXPECT_EQ(value<std::string>("eval", "--input-size"), "224,288");
  EXPECT_EQ(value<int>("eval", "--batch"), 12);
  EXPECT_TRUE(value<bool>("eval", "--test-flip"));
  EXPECT_EQ(value<std::string>("eval", "--resize-mode"), "shorter");
}

TEST_F(ConfigFileTest, IniSetsTheSubcommandsOptions) {
  const auto cfg = file("extract.ini",
                        "; extraction\n"
                        "[extract]\n"
                        "dataset-path=data/val\n"
                        "save-path=out ; where the .npy files go\n"
                        "workers=3\n");
  // --dataset-path and --save-path are required: the file provides them.
  parse({"extract", "--config", cfg});
  EXPECT_EQ(value<std::string>("extract", "--dataset-path"), "data/val");
  EXPECT_EQ(value<std::string>("extract", "--save-path"), "out");
  EXPECT_EQ(value<int>("extract", "--workers"), 3);
}

TEST_F(ConfigFileTest, TheCommandLineWins) {
  const auto cfg = file("c.toml", "batch = 3\nworkers = 2\n");
  // The command line's --batch replaces the file's, before or after --config.
  parse({"eval", "--batch", "7", "--config", cfg});
  EXPECT_EQ(value<int>("eval", "--batch"), 7);
  EXPECT_EQ(value<int>("eval", "--workers"), 2);
  CLI::App other{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(other, global);
  std::vector<std::string> args = {"fixres", "eval", "--config", cfg, "--batch", "9"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  other.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(other.get_subcommand("eval")->get_option("--batch")->as<int>(), 9);
  // A mistake in the file is one even where the command line gives the flag.
  const auto bad = file("bad.toml", "batch = 0\n");
  const std::string e = refusal({"eval", "--batch", "7", "--config", bad});
  EXPECT_NE(e.find(bad + ": batch = 0: --batch: must be"), std::string::npos) << e;
}

TEST_F(ConfigFileTest, OneFileServesSeveralSubcommandsBySection) {
  const auto cfg = file("all.toml",
                        "[train]\nepochs = 3\n"
                        "[eval]\nbatch = 5\n"
                        "[bench.eval]\nsteps = 2\n");
  parse({"eval", "--config", cfg});
  EXPECT_EQ(value<int>("eval", "--batch"), 5);
  // Before the subcommand too.
  CLI::App other{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(other, global);
  other.parse("--config " + cfg + " train --imnet-path x", false);
  EXPECT_EQ(other.get_subcommand("train")->get_option("--epochs")->as<int>(), 3);
}

TEST_F(ConfigFileTest, MistakesAreRefusedNamingTheFileAndKey) {
  const auto unknown = file("unknown.toml", "batch = 4\nbogus-flag = 3\n");
  std::string e = refusal({"eval", "--config", unknown});
  EXPECT_NE(e.find(unknown), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'bogus-flag'"), std::string::npos) << e;

  const auto junk = file("junk.toml", "this is not a config file\n");
  e = refusal({"eval", "--config", junk});
  EXPECT_NE(e.find(junk + ": unknown key 'this is not a config file'"), std::string::npos) << e;

  const auto section = file("section.toml", "[evl]\nbatch = 4\n");
  e = refusal({"eval", "--config", section});
  EXPECT_NE(e.find(section + ": unknown section [evl]"), std::string::npos) << e;

  const auto bad = file("bad.ini", "workers = 100000\n");
  e = refusal({"eval", "--config", bad});
  EXPECT_NE(e.find(bad + ": workers = 100000: --workers: must be an integer in [1, 1024]"),
            std::string::npos)
      << e;

  e = refusal({"eval", "--config", dir_ + "/missing.toml"});
  EXPECT_NE(e.find("cannot read config file " + dir_ + "/missing.toml: No such file"),
            std::string::npos)
      << e;

  e = refusal({"eval", "--config", dir_});
  EXPECT_NE(e.find("cannot read config file " + dir_ + ": a folder, not a regular file"),
            std::string::npos)
      << e;

  const auto self = file("self.toml", "config = other.toml\n");
  e = refusal({"eval", "--config", self});
  EXPECT_NE(e.find("'config' cannot be set in a config file"), std::string::npos) << e;
}

TEST_F(ConfigFileTest, SubcommandsWithoutConfigRefuseOne) {
  const auto cfg = file("v.toml", "batch = 4\n");
  const std::string e = refusal({"version", "--config", cfg});
  EXPECT_NE(e.find("fixres version takes no config file"), std::string::npos) << e;
}

}  // namespace
}  // namespace fixres::cli

namespace fixres::cli {
namespace {

// A section header or key of more than 4 dotted parts is refused before CLI11 parses the file
// (whose work grows with the square of the depth: 20,000 parts took gigabytes), naming the file
// and the line; a UTF-8 byte order mark is not part of the first key.
TEST_F(ConfigFileTest, DeepNamesAreRefusedAndAByteOrderMarkIsSkipped) {
  const auto longName = file("long.toml", "topk = 2\n[" + std::string(40000, 'a') + "]\n");
  std::string header = "[a";
  for (int k = 0; k < 20000; ++k) header += ".a";
  const auto deeper = file("deeper.toml", "topk = 2\n" + header + "]\nx = 1\n");
  const std::string e = refusal({"predict", "x.png", "--config", deeper});
  EXPECT_NE(e.find("deeper.toml: line 2: a name of 20001 dotted parts (at most 4)"),
            std::string::npos)
      << e;
  EXPECT_EQ(refusal({"predict", "x.png", "--config", longName}).find("dotted"), std::string::npos);
  const auto key = file("key.toml", "a.b.c.d.e = 1\n");
  EXPECT_NE(refusal({"predict", "x.png", "--config", key}).find("line 1: a name of 5 dotted"),
            std::string::npos);
  const auto bom = file("bom.toml", "\xEF\xBB\xBFtopk = 3\n");
  EXPECT_EQ(refusal({"predict", "x.png", "--config", bom}), "");
  EXPECT_EQ(value<int>("predict", "--topk"), 3);
}

}  // namespace
}  // namespace fixres::cli
