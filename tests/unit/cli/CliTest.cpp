// The command line as a whole, in the spirit of llama.cpp's argument-parser test: every flag
// and environment variable is declared once (a name shared by several subcommands comes from
// one declaration: the same help and variable everywhere), no subcommand shadows a global
// option, every choice lists its valid values in --help, and a bad choice is refused while
// parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/data/Sampler.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/image/Transform.h"
#include "fixres/runtime/Numerics.h"
#include "fixres/step/Schedule.h"
#include "fixres/step/StepBench.h"

namespace fixres::cli {
namespace {

struct Declared {
  std::string path;  // "train", "bench eval"
  const CLI::Option* option;
};

// Every option of every (sub)command, by long name.
void collect(const CLI::App& app, const std::string& path,
             std::map<std::string, std::vector<Declared>>& out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& name : o->get_lnames()) out["--" + name].push_back({path, o});
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

// Collects the rows a settings visit passes.
struct RowsOf {
  std::vector<Setting>* out;
  template <typename T>
  void operator()(const Setting& s, const T&) const {
    out->push_back(s);
  }
  template <typename T, typename E>
  void operator()(const Setting& s, const T&, const ChoiceTable<E>&) const {
    out->push_back(s);
  }
};

// The row of `flag` when it carries help per command (shared rows and the inference rows), else
// nullptr.
const Setting* rowWithHelpPerCommand(const std::string& flag) {
  static const std::vector<Setting> rows = [] {
    std::vector<Setting> all = sharedFlags();
    const engine::ModelRequest request{};
    engine::ModelRequest::visitSettings(request, RowsOf{&all});
    const engine::BenchLoop bench{};
    engine::BenchLoop::visitSettings(bench, RowsOf{&all});
    return all;
  }();
  // Any of the row's names: its flag or an alias ("--out,--output").
  for (const Setting& s : rows) {
    const auto names = s.flagNames();
    if (s.perCommand != nullptr && std::find(names.begin(), names.end(), flag) != names.end())
      return &s;
  }
  return nullptr;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { commands_ = buildCli(app_, global_); }
  CLI::App* sub(const std::string& name) { return app_.get_subcommand(name); }

  CLI::App app_{"fixres", "fixres"};
  GlobalOptions global_;
  std::vector<Command> commands_;
};

TEST_F(CliTest, SharedNamesComeFromOneDeclaration) {
  std::map<std::string, std::vector<Declared>> options;
  collect(app_, "", options);
  ASSERT_GT(options.size(), 50u);
  int shared = 0;
  for (const auto& [name, uses] : options) {
    if (name == "--help") continue;  // CLI11's own
    // The reference's eval-softmax spelling (--version v1|v2) beside the program's --version:
    // the only name with two meanings, each on its own (sub)command.
    if (name == "--version") {
      std::set<std::string> paths;
      for (const auto& u : uses) paths.insert(u.path);
      EXPECT_EQ(paths, (std::set<std::string>{"", "eval-softmax"}));
      continue;
    }
    if (uses.size() > 1) ++shared;
    // A row with help per command (Setting::perCommand): each command shows its own text.
    const Setting* perCommand = rowWithHelpPerCommand(name);
    for (const auto& u : uses) {
      if (perCommand != nullptr) {
        EXPECT_EQ(u.option->get_description(), perCommand->helpFor(u.path))
            << name << " in " << u.path;
      } else {
        EXPECT_EQ(u.option->get_description(), uses[0].option->get_description())
            << name << ": '" << u.path << "' and '" << uses[0].path << "' declare it differently";
      }
      EXPECT_EQ(u.option->get_envname(), uses[0].option->get_envname()) << name << " in " << u.path;
    }
  }
  EXPECT_GT(shared, 15);  // the check above did compare something
}

TEST_F(CliTest, NoEnvironmentVariableBindsTwoFlags) {
  std::map<std::string, std::vector<Declared>> options;
  collect(app_, "", options);
  std::map<std::string, std::set<std::string>> flagsOfEnv;
  for (const auto& [name, uses] : options)
    for (const auto& u : uses)
      if (!u.option->get_envname().empty()) flagsOfEnv[u.option->get_envname()].insert(name);
  EXPECT_FALSE(flagsOfEnv.empty());
  for (const auto& [env, flags] : flagsOfEnv) EXPECT_EQ(flags.size(), 1u) << env;
}

TEST_F(CliTest, SharedFlagTableHasNoDuplicates) {
  std::set<std::string> names, envs;
  for (const auto& f : sharedFlags()) {
    std::stringstream ss(f.flags);
    std::string n;
    while (std::getline(ss, n, ',')) EXPECT_TRUE(names.insert(n).second) << n;
    if (f.envName[0] != '\0') EXPECT_TRUE(envs.insert(f.envName).second) << f.envName;
    EXPECT_NE(f.help[0], '\0') << f.flags;
  }
}

TEST_F(CliTest, NoSubcommandShadowsAGlobalOption) {
  std::set<std::string> global;
  for (const CLI::Option* o : app_.get_options())
    for (const auto& n : o->get_lnames()) global.insert("--" + n);
  std::map<std::string, std::vector<Declared>> options;
  for (const CLI::App* s : app_.get_subcommands([](const CLI::App*) { return true; }))
    collect(*s, s->get_name(), options);
  for (const auto& [name, uses] : options) {
    // (--config is one flag in both places: `fixres --config F eval` = `fixres eval --config F`.)
    if (name == "--help" || name == "--version" || name == "--config") continue;
    EXPECT_EQ(global.count(name), 0u)
        << name << " of '" << uses[0].path << "' hides the global one";
  }
}

template <typename E>
void expectListed(const std::string& help, const ChoiceTable<E>& table, const std::string& flag) {
  ASSERT_NE(help.find(flag), std::string::npos) << flag;
  std::string list;
  for (const auto& n : choiceNames(table)) list += (list.empty() ? "{" : ",") + n;
  EXPECT_NE(help.find(list + "}"), std::string::npos) << flag << " does not list " << list << "}";
}

TEST_F(CliTest, EveryChoiceListsItsValuesInHelp) {
  for (const char* name : {"train", "finetune"}) {
    const std::string help = sub(name)->help();
    expectListed(help, image::transformKinds(), "--transform");
    expectListed(help, image::resizeModes(), "--resize-mode");
    expectListed(help, data::samplerKinds(), "--sampler");
    expectListed(help, engine::scheduleKinds(), "--lr-schedule");
    expectListed(help, engine::numericsChoices().precision, "--precision");
    expectListed(help, engine::numericsChoices().memoryFormat, "--memory-format");
    expectListed(help, engine::numericsChoices().normalizeOn, "--normalize-on");
    expectListed(help, distributed::backendNames(), "--backend");
  }
  for (const char* name : {"eval", "extract", "sweep"}) {
    const std::string help = sub(name)->help();
    expectListed(help, image::resizeModes(), "--resize-mode");
    expectListed(help, engine::numericsChoices().precision, "--precision");
  }
  expectListed(sub("bench")->get_subcommand("data")->help(), image::transformKinds(), "--kind");
}

TEST_F(CliTest, BadChoiceIsRefusedWhileParsing) {
  try {
    app_.parse("train --imnet-path /nonexistent --transform bogus-kind", false);
    FAIL() << "bogus-kind accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("bogus-kind"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--transform"), std::string::npos) << e.what();
    EXPECT_EQ(e.get_exit_code(), static_cast<int>(CLI::ExitCodes::ValidationError));
  }
  // The same flag with a valid name parses (the refusal above is about the value).
  CLI::App fresh{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(fresh, global);
  fresh.parse("train --imnet-path /nonexistent --transform v2-train", false);
  EXPECT_EQ(fresh.get_subcommand("train")->get_option("--transform")->as<std::string>(),
            "v2-train");
}

}  // namespace
}  // namespace fixres::cli
