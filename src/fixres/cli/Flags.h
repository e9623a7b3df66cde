// The one binder of flags: a setting row (common/Setting.h) bound to its typed field on a
// subcommand. The rows several subcommands share are named constants (cli/SharedRows.h for the
// flags of one invocation; the run settings' beside their components, engine::kBatchRow, ...).
// The row's range becomes the flag's check (a bad value is refused while parsing, exit 2, the
// value named; the range shows in --help); a choice flag is bound to its enum through the enum's
// name table, its valid values listed in --help; a list row through its ListSyntax.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"

namespace fixres::cli {

// Value checks attached where a flag is declared, so a bad value is refused while parsing (exit
// 2) with "<flag>: must be ..., got '<value>'" and the range shows in --help.
// An integer in [lo, hi].
CLI::Validator intIn(int64_t lo, int64_t hi);
// -1 (meaning "all") or an integer in [1, hi].
CLI::Validator allOrAtLeastOne(int64_t hi);
// A finite number in [lo, hi], or in (lo, hi] when `openLow`.
CLI::Validator finiteIn(double lo, double hi, bool openLow = false);
// A comma-separated list of integers, each in [lo, hi].
CLI::Validator intListIn(int64_t lo, int64_t hi);

// "must be <range>, got '<value>'" for a value outside `range` (a number; for a string target with
// an integer range, a comma-separated list of such integers).
CLI::Validator rangeValidator(const Range& range);

// The one check of every output path flag (--out, --save-path, --json): UsageError naming `flag`
// when `path` is empty, and naming both when the output is inside one of `inputs` (an input
// dataset or source folder, by its flag) or one of them is inside the output (compared with
// links resolved as far as the paths exist). The output flags' rows run it with no inputs while
// parsing; each subcommand runs it with its inputs before it writes anything.
struct NamedPath {
  std::string flag, path;
};
void checkOutputPath(const std::string& flag, const std::string& path,
                     const std::vector<NamedPath>& inputs = {});
// Every path command `app` was given to read: the values of its options (and of the top-level
// --config) that name an existing file or folder, except those of the options named in
// `outputs`, and its positional arguments ("-" and URLs excepted). With checkOutputPath, no
// output of a command can be one of its inputs or lie inside one, whichever flag names it.
std::vector<NamedPath> givenInputs(const CLI::App& app, const std::vector<std::string>& outputs);
// checkOutputPath(flag, value) as a validator: "must not be empty".
CLI::Validator outputPathValidator(const std::string& flag);

// The rows of cli/SharedRows.h: the flags of one invocation several commands share.
const std::vector<Setting>& invocationRows();
// Every shared row, each flag name once: the run settings' rows in RunConfig order, then the
// invocation flags.
const std::vector<Setting>& sharedFlags();

// The command `app` is, as its rows name it: its name below the top-level app, a nested one
// after its parent's ("predict", "bench train").
std::string commandName(const CLI::App& app);

// Binds `row` to `target` on `app` (the current value is the default shown): its names, help,
// group, environment variable and range. A bool is a flag (a "--no-..." flag sets it false); an
// optional is set only when given; a vector takes 3 values (R G B).
CLI::Option* bindSetting(CLI::App& app, const Setting& row, bool& target);
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::string& target);
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::vector<float>& target);
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::vector<std::string>& target);
// An optional number or text: set only when given (no default shown), the row's range checked.
template <typename T>
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::optional<T>& target) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>, "a number or text");
  auto* opt =
      app.add_option_function<T>(
             row.flags, [&target](const T& v) { target = v; }, row.helpFor(commandName(app)))
          ->group(row.group);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  // Text with an integer range is a comma-separated list of them (--input-size "224,288").
  if constexpr (std::is_arithmetic_v<T>) {
    if (row.range.kind != Range::Kind::kAny) opt->check(rangeValidator(row.range));
  } else if (row.range.kind == Range::Kind::kInteger) {
    opt->check(intListIn(static_cast<int64_t>(row.range.lo), static_cast<int64_t>(row.range.hi)));
  }
  return opt;
}
template <typename T>
CLI::Option* bindSetting(CLI::App& app, const Setting& row, T& target) {
  static_assert(std::is_arithmetic_v<T>, "a numeric setting");
  auto* opt = app.add_option(row.flags, target, row.helpFor(commandName(app)))
                  ->capture_default_str()
                  ->group(row.group);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  if (row.range.kind != Range::Kind::kAny) opt->check(rangeValidator(row.range));
  return opt;
}

// --config FILE on subcommand `app`: its options read from a TOML file (an INI file when the
// name ends in .ini): `key = value` lines whose keys are the subcommand's flag names without
// "--", optionally under a [<subcommand>] section (sections of other subcommands are skipped, so
// one file can serve several). Flags given on the command line win over the file. Applied after
// the command line is read and before required flags are checked; a missing or unreadable file,
// an unknown key or section, or a bad value is refused with exit 2 naming the file and the key.
CLI::Option* addConfigFile(CLI::App& app);

// Runs `check`, a check of values that the command line and --config have both set (as a final
// callback of subcommand `app`, which runs after both): a UsageError or CLI::ValidationError it
// throws becomes a CLI::ValidationError (exit 2) led, when the first flag the message names that
// --config set, by the file and the key: "--config F: momentum = 0: --nesterov needs ...".
void checkMerged(CLI::App& app, const std::function<void()>& check);

// A validator listing the table's names ("{a,b,c}" in --help) and refusing others with
// "unknown <noun> 'x' (valid: ...)".
template <typename E>
CLI::Validator choiceValidator(const ChoiceTable<E>& table) {
  std::string desc;
  for (const auto& n : choiceNames(table)) desc += (desc.empty() ? "{" : ",") + n;
  return CLI::Validator([&table](std::string& v) { return choiceError(table, v); }, desc + "}");
}

// An option whose value is a name of `table`, stored as the enum.
template <typename E>
CLI::Option* addChoice(CLI::App& app, const std::string& names, E& target,
                       const ChoiceTable<E>& table, const std::string& help) {
  auto* opt = app.add_option_function<std::string>(
      names, [&target, &table](const std::string& v) { target = parseChoice(table, v, "flag"); },
      help);
  opt->check(choiceValidator(table))->default_str(choiceName(table, target));
  return opt;
}

// A choice row bound to its enum.
template <typename E>
CLI::Option* bindSetting(CLI::App& app, const Setting& row, E& target,
                         const ChoiceTable<E>& table) {
  auto* opt =
      addChoice(app, row.flags, target, table, row.helpFor(commandName(app)))->group(row.group);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  return opt;
}

// A choice row bound to an optional enum: set only when given (no default shown).
template <typename E>
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::optional<E>& target,
                         const ChoiceTable<E>& table) {
  auto* opt = app.add_option_function<std::string>(
      row.flags,
      [&target, &table](const std::string& v) { target = parseChoice(table, v, "flag"); },
      row.helpFor(commandName(app)));
  opt->check(choiceValidator(table))->group(row.group);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  return opt;
}

// A list row bound to its typed values: set only when given (the target keeps its default
// otherwise), the text parsed by the row's syntax while parsing (a bad entry: exit 2, named).
template <typename T>
CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::vector<T>& target,
                         const ListSyntax<T>& syntax) {
  auto* opt = app.add_option_function<std::vector<std::string>>(
      row.flags,
      [&target, &syntax, flag = row.flag()](const std::vector<std::string>& given) {
        try {
          target = syntax.parse(given, flag);
        } catch (const std::exception& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      row.helpFor(commandName(app)));
  opt->group(row.group)->expected(1)->multi_option_policy(
      syntax.repeatable ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::Throw);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  // Integers in a range: each entry checked as every ranged flag is ("<flag>: must be ...").
  if (row.range.kind == Range::Kind::kInteger)
    opt->check(intListIn(static_cast<int64_t>(row.range.lo), static_cast<int64_t>(row.range.hi)));
  return opt;
}

// Binds every row of a settings visit that the command `app` offers (Setting::offeredTo), with
// the help its row gives that command: `Options::visitSettings(options, SettingsBinder{app})`.
struct SettingsBinder {
  CLI::App& app;
  template <typename T>
  void operator()(const Setting& row, T& target) const {
    if (row.offeredTo(commandName(app))) bindSetting(app, row, target);
  }
  template <typename E>
  void operator()(const Setting& row, E& target, const ChoiceTable<E>& table) const {
    if (row.offeredTo(commandName(app))) bindSetting(app, row, target, table);
  }
  template <typename E>
  void operator()(const Setting& row, std::optional<E>& target, const ChoiceTable<E>& table) const {
    if (row.offeredTo(commandName(app))) bindSetting(app, row, target, table);
  }
  template <typename T>
  void operator()(const Setting& row, std::vector<T>& target, const ListSyntax<T>& syntax) const {
    if (row.offeredTo(commandName(app))) bindSetting(app, row, target, syntax);
  }
};

}  // namespace fixres::cli
