// The flags several subcommands share, each declared exactly once here (names, help, group,
// environment variable), and the helpers that add them to a subcommand. A choice flag is bound
// to its enum through the enum's name table: the valid values are listed in --help, and a bad
// value is refused while parsing (exit 2, the value named) before any file is opened.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "fixres/common/Choice.h"

namespace fixres::cli {

struct FlagSpec {
  std::string names;  // CLI11 form: "--weight-path,--resnet-weight-path"
  std::string help;
  std::string group;    // section of --help
  std::string envName;  // environment variable that sets it, or ""
  // What is wrong with a value given for it ("" when nothing), checked while parsing; or none.
  std::string (*check)(const std::string& value) = nullptr;
};

// Every shared flag, in --help order.
const std::vector<FlagSpec>& sharedFlags();
// The shared flag whose first name is `name` (InternalError for an unknown one).
const FlagSpec& sharedFlag(const std::string& name);
// Gives `opt` the group, environment variable and check of `f`.
CLI::Option* withSpec(CLI::Option* opt, const FlagSpec& f);

// Adds shared flag `name` bound to `target` (the current value is the default shown).
template <typename T>
CLI::Option* addShared(CLI::App& app, const std::string& name, T& target) {
  const FlagSpec& f = sharedFlag(name);
  return withSpec(app.add_option(f.names, target, f.help)->capture_default_str(), f);
}
CLI::Option* addSharedFlag(CLI::App& app, const std::string& name, bool& target);

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
  return withSpec(addChoice(app, f.names, target, table, f.help), f);
}

}  // namespace fixres::cli
