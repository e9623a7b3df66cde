// Every flag a row: the options of predict, eval, sweep, export, calibrate and the benchmarks are
// all setting rows (common/Setting.h), each bound on exactly the commands its row names, with the
// help its row gives that command; and the row helpers read their lists as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/Options.h"
#include "fixres/common/Setting.h"
#include "fixres/data/BenchData.h"
#include "fixres/data/Holdout.h"
#include "fixres/data/Import.h"
#include "fixres/data/ShardWriter.h"
#include "fixres/distributed/Launcher.h"
#include "fixres/engine/CalibrationJob.h"
#include "fixres/engine/EvalJob.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/Predict.h"
#include "fixres/engine/Resolution.h"
#include "fixres/step/StepBench.h"
#include "fixres/sweep/Sweep.h"

namespace fixres::cli {
namespace {

struct CommandRowCollector {
  std::vector<Setting>& rows;
  template <typename T>
  void operator()(const Setting& s, const T&) {
    rows.push_back(s);
  }
  template <typename T, typename E>
  void operator()(const Setting& s, const T&, const ChoiceTable<E>&) {
    rows.push_back(s);
  }
  template <typename T>
  void operator()(const Setting& s, const std::vector<T>&, const ListSyntax<T>&) {
    rows.push_back(s);
  }
};

// The refusal of `fixres <line>` while parsing ("" when it parses).
std::string parse(const std::string& line) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  try {
    app.parse(line, false);
    return "";
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
}

template <typename Options>
void collectRows(std::vector<Setting>& rows) {
  const Options defaults{};
  Options::visitSettings(defaults, CommandRowCollector{rows});
}

// Every row there is: the shared ones (the run settings' and the invocation flags) and each
// command's own.
std::vector<Setting> allCommandRows() {
  std::vector<Setting> rows = sharedFlags();
  collectRows<engine::ModelRequest>(rows);
  collectRows<engine::PredictOptions>(rows);
  collectRows<engine::EvalRequest>(rows);
  collectRows<engine::SweepOptions>(rows);
  collectRows<engine::ExportOptions>(rows);
  collectRows<engine::CalibrationJob>(rows);
  collectRows<engine::BenchLoop>(rows);
  collectRows<data::BenchDataOptions>(rows);
  collectRows<engine::SuggestRequest>(rows);
  collectRows<data::ImportOptions>(rows);
  collectRows<data::ShardRequest>(rows);
  collectRows<data::HoldoutRequest>(rows);
  collectRows<distributed::LaunchRequest>(rows);
  return rows;
}

// The parsed CLI's command `path` ("bench train").
CLI::App* commandAt(CLI::App& app, const std::string& path) {
  CLI::App* a = &app;
  size_t at = 0;
  while (at < path.size()) {
    const size_t end = std::min(path.find(' ', at), path.size());
    a = a->get_subcommand(path.substr(at, end - at));
    at = end + 1;
  }
  return a;
}

TEST(CommandRows, ListsAndPerCommandHelpReadAsDocumented) {
  static constexpr CommandHelp kHelp[] = {
      {"export,calibrate", "weights"}, {"bench train", "steps"}, {nullptr, nullptr}};
  const Setting row{
      "", "--x", "G", "plain", {}, SettingRole::kInvocation, "export,calibrate,bench train",
      "", kHelp};
  EXPECT_TRUE(row.offeredTo("export"));
  EXPECT_TRUE(row.offeredTo("calibrate"));
  EXPECT_TRUE(row.offeredTo("bench train"));
  EXPECT_FALSE(row.offeredTo("bench"));
  EXPECT_FALSE(row.offeredTo("train"));
  EXPECT_FALSE(row.offeredTo("exp"));
  EXPECT_EQ(row.helpFor("calibrate"), "weights");
  EXPECT_EQ(row.helpFor("bench train"), "steps");
  EXPECT_EQ(row.helpFor("predict"), "plain");
  const Setting everywhere{"", "--y", "G", "all"};
  EXPECT_TRUE(everywhere.offeredTo("anything"));
  const Setting noFlag{"key", "", "G", "set by the program"};
  EXPECT_FALSE(noFlag.offeredTo("train"));
}

// The commands whose every option is a row (beyond --help, --config and the cluster options,
// which are the same for every command that connects ranks).
const std::vector<std::string> kRowCommands = {
    "predict",     "eval",       "sweep",           "export",     "calibrate",
    "bench train", "bench eval", "bench allreduce", "bench data", "suggest-resolution",
    "import",      "shard",      "holdout",         "launch"};

TEST(CommandRows, EveryOptionOfTheseCommandsIsARow) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  std::set<std::string> rowFlags;
  for (const Setting& s : allCommandRows()) rowFlags.insert(s.flag());
  CLI::App clusterOnly{"c"};
  ClusterOptions cluster;
  addClusterOptions(clusterOnly, cluster);
  std::set<std::string> clusterFlags;
  for (const CLI::Option* o : clusterOnly.get_options()) clusterFlags.insert(o->get_name());
  int checked = 0;
  for (const std::string& path : kRowCommands) {
    CLI::App* sub = commandAt(app, path);
    ASSERT_NE(sub, nullptr) << path;
    for (const CLI::Option* o : sub->get_options()) {
      const std::string name = o->get_name();
      if (o->get_positional() || name == "--help" || name == "--config" ||
          clusterFlags.count(name) > 0)
        continue;
      EXPECT_EQ(rowFlags.count(name), 1u) << "fixres " << path << " " << name << " is not a row";
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

// Each command's own row is bound on exactly the commands it names, with that command's help.
TEST(CommandRows, EachRowIsBoundWhereItsRowSaysWithItsHelp) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  std::vector<Setting> own;
  collectRows<engine::ModelRequest>(own);
  collectRows<engine::PredictOptions>(own);
  collectRows<engine::EvalRequest>(own);
  collectRows<engine::SweepOptions>(own);
  collectRows<engine::ExportOptions>(own);
  collectRows<engine::CalibrationJob>(own);
  collectRows<engine::BenchLoop>(own);
  collectRows<data::BenchDataOptions>(own);
  collectRows<engine::SuggestRequest>(own);
  collectRows<data::ImportOptions>(own);
  collectRows<data::ShardRequest>(own);
  collectRows<data::HoldoutRequest>(own);
  collectRows<distributed::LaunchRequest>(own);
  int checked = 0;
  for (const Setting& s : own) {
    ASSERT_NE(s.commands[0], '\0') << s.flag() << ": a command's own row names its commands";
    for (const std::string& path : kRowCommands) {
      CLI::App* sub = commandAt(app, path);
      const CLI::Option* o = nullptr;
      for (const CLI::Option* x : sub->get_options())
        if (x->get_name() == s.flag()) o = x;
      if (!s.offeredTo(path)) {
        // Another row of the same name may be bound there (--steps and --iters share a field,
        // not a name): only a row of this name that this command does not list is an error.
        bool other = false;
        for (const Setting& t : own)
          other = other || (t.flag() == s.flag() && &t != &s && t.offeredTo(path));
        if (!other) EXPECT_EQ(o, nullptr) << path << " binds " << s.flag();
        continue;
      }
      ASSERT_NE(o, nullptr) << path << " lacks " << s.flag();
      EXPECT_EQ(o->get_description(), s.helpFor(path)) << path << " " << s.flag();
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

// The rows of the commands that became requests (suggest-resolution, import, shard, holdout):
// a value just outside each bound of a numeric row is refused while parsing, naming the flag,
// its range and the value; the bound itself is taken.
TEST(CommandRows, TheNewRequestsRowsEnforceTheirRanges) {
  struct Case {
    const char* command;  // with the flags it requires
    std::vector<Setting> rows;
  };
  std::vector<Case> cases = {{"suggest-resolution", {}},
                             {"import --out o", {}},
                             {"shard --dataset-path d --out o", {}},
                             {"holdout --imnet-path d", {}}};
  collectRows<engine::SuggestRequest>(cases[0].rows);
  collectRows<data::ImportOptions>(cases[1].rows);
  collectRows<data::ShardRequest>(cases[2].rows);
  collectRows<data::HoldoutRequest>(cases[3].rows);
  const auto text = [](double v) {
    std::ostringstream s;
    s << std::setprecision(12) << v;  // 1000000.001 stays above --shard-size's bound
    return s.str();
  };
  int checked = 0;
  for (const Case& c : cases) {
    for (const Setting& s : c.rows) {
      if (s.range.kind == Range::Kind::kAny) continue;
      SCOPED_TRACE(std::string(c.command) + " " + s.flag());
      const double step = s.range.kind == Range::Kind::kInteger ? 1 : 1e-3;
      const double below = s.range.loOpen ? s.range.lo : s.range.lo - step;
      if (!(s.range.hasSpecial && below == s.range.special)) {
        const std::string e = parse(std::string(c.command) + " " + s.flag() + "=" + text(below));
        EXPECT_NE(e.find(s.flag() + ": must be " + s.range.describe()), std::string::npos) << e;
        EXPECT_NE(e.find("got '" + text(below) + "'"), std::string::npos) << e;
      }
      if (!std::isinf(s.range.hi)) {
        const double above = s.range.hiOpen ? s.range.hi : s.range.hi + step;
        const std::string e = parse(std::string(c.command) + " " + s.flag() + "=" + text(above));
        EXPECT_NE(e.find(s.flag() + ": must be"), std::string::npos) << e;
        EXPECT_EQ(parse(std::string(c.command) + " " + s.flag() + "=" + text(s.range.hi)), "");
      }
      if (!s.range.loOpen)
        EXPECT_EQ(parse(std::string(c.command) + " " + s.flag() + "=" + text(s.range.lo)), "");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);  // 4 + 3 + 1 + 1 rows with a range
}

// A list row is typed: its text becomes its values once, while parsing (no raw copy is kept), and
// a bad entry is refused then, naming the flag and the entry; a repeatable row (--eval-set) sees
// every occurrence at once (a name given twice is refused).
TEST(CommandRows, ListRowsAreParsedOnceWhileParsing) {
  const std::string sweep = "sweep --weight-path w --imnet-path d ";
  EXPECT_EQ(parse(sweep + "--sizes 224,288 --crop-pcts 0.875,1 --precisions fp32,bf16 "
                          "--eval-set a=x --eval-set b=y"),
            "");
  EXPECT_EQ(parse("eval --weight-path w --dataset-path d --input-size 224,288"), "");
  const std::vector<std::pair<std::string, std::string>> refusals = {
      {sweep + "--sizes 224,4", "--sizes: must be"},
      {sweep + "--crop-pcts 0.9,2", "--crop-pcts values must be"},
      {sweep + "--precisions fp32,auto", "not auto"},
      {sweep + "--eval-set noname", "--eval-set 'noname': expected NAME=PATH"},
      {sweep + "--eval-set a=x --eval-set a=y", "the name 'a' is given twice"},
      {sweep + "--sizes 224 --sizes 288", "--sizes"},
      {"eval --weight-path w --dataset-path d --input-size 224,x", "--input-size: must be"}};
  for (const auto& [line, says] : refusals)
    EXPECT_NE(parse(line).find(says), std::string::npos) << line << ": " << parse(line);
  // The values, as the syntaxes make them.
  EXPECT_EQ(engine::kSizeListSyntax.parse({" 224, 288"}, "--sizes"), (std::vector<int>{224, 288}));
  EXPECT_EQ(engine::kCropListSyntax.parse({"0.9,1"}, "--crop-pcts"),
            (std::vector<double>{0.9, 1.0}));
  EXPECT_EQ(engine::kPrecisionListSyntax.parse({"bf16,fp32"}, "--precisions"),
            (std::vector<engine::Precision>{engine::Precision::kBf16, engine::Precision::kFp32}));
  const auto sets = engine::kEvalSetSyntax.parse({"a=x", "b=y=z"}, "--eval-set");
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[1].name, "b");
  EXPECT_EQ(sets[1].path, "y=z");
}

// `fixres settings` lists every option of every command: its flag (or a positional input's name)
// appears in one of its tables, with the command's help, default, range and meaning.
TEST(CommandRows, FixresSettingsListsEveryOptionOfEveryCommand) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  std::string listed;
  for (const Command& c : commands) {
    if (c.app->get_name() != "settings") continue;
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(c.run(), 0);
    listed = ::testing::internal::GetCapturedStdout();
  }
  ASSERT_FALSE(listed.empty());
  int checked = 0;
  std::vector<CLI::App*> todo = app.get_subcommands([](const CLI::App*) { return true; });
  while (!todo.empty()) {
    CLI::App* sub = todo.back();
    todo.pop_back();
    for (CLI::App* nested : sub->get_subcommands([](const CLI::App*) { return true; }))
      todo.push_back(nested);
    for (const CLI::Option* o : sub->get_options()) {
      const std::string name = o->get_positional() ? o->get_name(true) : o->get_name();
      if (name == "--help") continue;
      EXPECT_NE(listed.find("`" + name + "`"), std::string::npos)
          << "fixres " << commandName(*sub) << " " << name << " is not in fixres settings";
      ++checked;
    }
  }
  EXPECT_GE(checked, 300);
}

// A shared row with help per command shows each command its own text.
TEST(CommandRows, SharedRowsGiveEachCommandItsHelp) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  int checked = 0;
  for (const Setting& s : sharedFlags()) {
    if (s.perCommand == nullptr) continue;
    for (const CommandHelp* h = s.perCommand; h->commands != nullptr; ++h) {
      const std::string list = h->commands;
      for (size_t at = 0; at <= list.size();) {
        const size_t end = std::min(list.find(',', at), list.size());
        const std::string path = list.substr(at, end - at);
        at = end + 1;
        CLI::App* sub = commandAt(app, path);
        const CLI::Option* o = sub->get_option_no_throw(s.flag());
        ASSERT_NE(o, nullptr) << path << " lacks " << s.flag();
        EXPECT_EQ(o->get_description(), h->help) << path << " " << s.flag();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace fixres::cli
