// `fixres settings`: the table of a run's settings, generated from their rows (common/Setting.h):
// config.json key, flag, the train and finetune defaults, valid values and what resume does when
// one changes; then one table per command's own options (predict, eval, sweep, export,
// calibrate, bench).
// docs/cli-reference.md carries its output.
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <type_traits>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/Options.h"
#include "fixres/cli/SharedRows.h"
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
#include "fixres/engine/RunConfig.h"
#include "fixres/engine/RunCurves.h"
#include "fixres/step/StepBench.h"
#include "fixres/sweep/Sweep.h"
#include "fixres/weights/WeightCache.h"

namespace fixres::cli {
namespace {

const char* roleText(SettingRole role) {
  switch (role) {
    case SettingRole::kDefinesRun:
      return "refused (defines the run)";
    case SettingRole::kNotCompared:
      return "not compared";
    case SettingRole::kInvocation:
      return "not saved";
    case SettingRole::kCompared:
      break;
  }
  return "noted";
}

// "`--batch` (also `--batch-size`, `-b`)": a row's flag with the other spellings it accepts.
std::string flagWithAliases(const Setting& s) {
  const std::vector<std::string> names = s.flagNames();
  std::string also;
  for (size_t i = 1; i < names.size(); ++i) also += (i > 1 ? ", `" : "`") + names[i] + "`";
  return "`" + names.front() + "`" + (also.empty() ? "" : " (also " + also + ")");
}

// One markdown row per setting.
struct TablePrinter {
  std::ostream& out;
  nlohmann::json train, finetune;
  template <typename T>
  void operator()(const Setting& s, const T&) {
    const std::string flag = s.flags[0] == '\0' ? "" : flagWithAliases(s);
    const std::string key = s.saved() ? "`" + std::string(s.key) + "`" : "";
    auto value = [&s](const nlohmann::json& j) {
      return s.saved() && j.contains(s.key) ? "`" + j.at(s.key).dump() + "`" : std::string();
    };
    const std::string only = s.commands[0] == '\0' ? "" : std::string(" (") + s.commands + " only)";
    out << "| " << key << " | " << flag << only << " | " << value(train) << " | " << value(finetune)
        << " | " << s.range.brief() << " | " << roleText(s.role) << " |\n";
  }
  template <typename T, typename E>
  void operator()(const Setting& s, const T& t, const ChoiceTable<E>& table) {
    (*this)(s, t);
  }
};

// One markdown row per flag of a command's own options (not saved in config.json).
struct CommandTablePrinter {
  std::ostream& out;
  void row(const Setting& s, const std::string& value, const std::string& valid) {
    out << "| " << flagWithAliases(s) << " | " << (s.commands[0] == '\0' ? "several" : s.commands)
        << " | `" << value << "` | " << valid << " | " << s.help << " |\n";
  }
  template <typename T>
  void operator()(const Setting& s, const T& value) {
    row(s, nlohmann::json(value).dump(), s.range.brief());
  }
  // A request's row set only when given: what applies otherwise, its help says.
  template <typename T>
  void operator()(const Setting& s, const std::optional<T>&) {
    row(s, "not given", s.range.brief());
  }
  template <typename E>
  void operator()(const Setting& s, const E& value, const ChoiceTable<E>& table) {
    row(s, choiceName(table, value), choiceList(table));
  }
  template <typename E>
  void operator()(const Setting& s, const std::optional<E>&, const ChoiceTable<E>& table) {
    row(s, "not given", choiceList(table));
  }
  // A list row: its default entries, as the flag would take them.
  template <typename T>
  void operator()(const Setting& s, const std::vector<T>& value, const ListSyntax<T>& syntax) {
    row(s, value.empty() ? "not given" : listText(value),
        std::string(syntax.repeatable ? "repeatable" : "comma-separated") +
            (s.range.kind == Range::Kind::kAny ? "" : ", each " + s.range.brief()));
  }
  template <typename T>
  static std::string listText(const std::vector<T>& value) {
    std::string text;
    if constexpr (std::is_arithmetic_v<T>)
      for (const T& v : value) text += (text.empty() ? "" : ",") + nlohmann::json(v).dump();
    return text;
  }
  template <typename E>
  static std::string choiceList(const ChoiceTable<E>& table) {
    std::string names;
    for (const auto& n : choiceNames(table)) names += (names.empty() ? "" : ", ") + n;
    return names;
  }
};

// A table of the rows of Options's visit, under `title`.
template <typename Options>
void printTable(std::ostream& out, const char* title, const Options& defaults = Options{}) {
  out << "\n### " << title
      << "\n\n| flag | commands | default | valid values | meaning |\n|---|---|---|---|---|\n";
  Options::visitSettings(defaults, CommandTablePrinter{out});
}

// A table of rows that belong to no options struct: the flags of one invocation several
// commands share, the small commands' inputs and flags (their defaults: --help's).
void printRows(std::ostream& out, const char* title, const std::vector<Setting>& rows) {
  out << "\n### " << title
      << "\n\n| flag | commands | default | valid values | meaning |\n|---|---|---|---|---|\n";
  CommandTablePrinter printer{out};
  for (const Setting& s : rows) printer.row(s, "", s.range.brief());
}

// The options of the commands that are not runs, each a settings visit of its own.
void printCommandTables(std::ostream& out) {
  printRows(out, "paths, outputs, downloads, device (several commands)", invocationRows());
  printTable<engine::ModelRequest>(out, "inference (eval, predict, extract, calibrate, export)");
  printTable<engine::PredictOptions>(out, "predict");
  printTable<engine::EvalRequest>(out, "eval");
  printTable<engine::SweepOptions>(out, "sweep");
  printTable<engine::ExportOptions>(out, "export");
  printTable<engine::CalibrationJob>(out, "calibrate");
  printTable<engine::BenchLoop>(out, "bench train, eval, allreduce");
  printTable<data::BenchDataOptions>(out, "bench data");
  printTable<engine::SuggestRequest>(out, "suggest-resolution");
  printTable<data::ImportOptions>(out, "import");
  printTable<data::ShardRequest>(out, "shard");
  printTable<data::HoldoutRequest>(out, "holdout");
  printTable<distributed::LaunchRequest>(out, "launch");
  printTable<ClusterOptions>(out, "cluster (every command that runs ranks)");
  printTable<GlobalOptions>(out, "global (before the subcommand)");
  printRows(out, "inputs and flags of predict, plot, weights fetch, eval-softmax",
            {engine::kPredictInputsRow, engine::kPlotRunDirRow, models::kFetchWhatRow,
             models::kRefreshRow, kSoftmaxVersionRow});
}

}  // namespace

Command addSettingsCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "settings",
      "The settings of train and finetune runs as a table: config.json key, flag, "
      "defaults, valid values, what resuming with a changed value does");
  return {sub, []() {
            const auto train = engine::RunConfig::forMode(engine::RunMode::kTrain);
            const auto finetune = engine::RunConfig::forMode(engine::RunMode::kFinetune);
            std::cout << "| config.json key | flag | train default | finetune default | valid "
                         "values | on resume |\n|---|---|---|---|---|---|\n";
            engine::RunConfig::visitSettings(
                train, TablePrinter{std::cout, train.toJson(), finetune.toJson()});
            printCommandTables(std::cout);
            return 0;
          }};
}

}  // namespace fixres::cli
