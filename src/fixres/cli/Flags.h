// The flags several subcommands share, each declared exactly once here (names, help, group,
// environment variable), and the helpers that add them to a subcommand. A choice flag is bound
// to its enum through the enum's name table: the valid values are listed in --help, and a bad
// value is refused while parsing (exit 2, the value named) before any file is opened.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Choice.h"

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

struct FlagSpec {
  std::string names;  // CLI11 form: "--weight-path,--resnet-weight-path"
  std::string help;
  std::string group;                                   // section of --help
  std::string envName;                                 // environment variable that sets it, or ""
  std::optional<CLI::Validator> check = std::nullopt;  // the valid values, for every subcommand
};

// Every shared flag, in --help order.
const std::vector<FlagSpec>& sharedFlags();
// The shared flag whose first name is `name` (InternalError for an unknown one).
const FlagSpec& sharedFlag(const std::string& name);

// Adds shared flag `name` bound to `target` (the current value is the default shown).
template <typename T>
CLI::Option* addShared(CLI::App& app, const std::string& name, T& target) {
  const FlagSpec& f = sharedFlag(name);
  auto* opt = app.add_option(f.names, target, f.help)->capture_default_str()->group(f.group);
  if (!f.envName.empty()) opt->envname(f.envName);
  if (f.check) opt->check(*f.check);
  return opt;
}
CLI::Option* addSharedFlag(CLI::App& app, const std::string& name, bool& target);

// --config FILE on subcommand `app`: its options read from a TOML file (an INI file when the
// name ends in .ini): `key = value` lines whose keys are the subcommand's flag names without
// "--", optionally under a [<subcommand>] section (sections of other subcommands are skipped, so
// one file can serve several). Flags given on the command line win over the file. Applied after
// the command line is read and before required flags are checked; a missing or unreadable file,
// an unknown key or section, or a bad value is refused with exit 2 naming the file and the key.
CLI::Option* addConfigFile(CLI::App& app);

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

// A shared choice flag.
template <typename E>
CLI::Option* addSharedChoice(CLI::App& app, const std::string& name, E& target,
                             const ChoiceTable<E>& table) {
  const FlagSpec& f = sharedFlag(name);
  auto* opt = addChoice(app, f.names, target, table, f.help)->group(f.group);
  if (!f.envName.empty()) opt->envname(f.envName);
  return opt;
}

}  // namespace fixres::cli
