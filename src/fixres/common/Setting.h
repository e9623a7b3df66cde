// One row per setting: its config.json key, flag names, --help group and text, valid values and
// its role on resume. A component lists its settings next to its options struct, as a
// `visitSettings(v)` member calling v(row, field) (v(row, field, table) for a choice); the
// default is the field's initialiser, written once. The CLI (flags, --help, value checks while
// parsing), config.json (both directions), --config, the engine's range checks, resume's
// comparison and `fixres settings` are all visitors over the same rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace fixres {

// The valid values of a numeric setting: an interval, plus optionally one value outside it that
// has a meaning of its own (-1: none, 0: off or automatic).
struct Range {
  enum class Kind { kAny, kInteger, kReal };
  Kind kind = Kind::kAny;
  double lo = -INFINITY, hi = INFINITY;
  bool loOpen = false, hiOpen = false;
  bool hasSpecial = false;
  double special = 0;
  const char* specialMeaning = "";

  // [lo, hi], integers; hi = INFINITY: >= lo.
  static constexpr Range integers(double lo, double hi = INFINITY) {
    return {Kind::kInteger, lo, hi, false, false};
  }
  // A finite number in [lo, hi] (open ends as asked); hi = INFINITY: no upper bound.
  static constexpr Range reals(double lo, double hi = INFINITY, bool loOpen = false,
                               bool hiOpen = false) {
    return {Kind::kReal, lo, hi, loOpen, hiOpen};
  }
  // The same range, also accepting `value` ("-1: none").
  constexpr Range orValue(double value, const char* meaning) const {
    Range r = *this;
    r.hasSpecial = true;
    r.special = value;
    r.specialMeaning = meaning;
    return r;
  }

  bool contains(double v) const;
  // "an integer in [8, 4096]", "a finite number in (0, 1024]", "an integer >= 1 (or -1: none)";
  // "" for kAny.
  std::string describe() const;
  // The short form --help shows after the type: "[8, 4096]", ">= 1", "(0, 1024]", "-1 or >= 1".
  std::string brief() const;
};

// What resuming a run does with a setting that changed.
enum class SettingRole {
  kCompared,     // noted in the log (and accepted)
  kDefinesRun,   // refused unless --allow-config-change: the model, data order, step size, seed
  kNotCompared,  // saved in config.json, never compared (the run folder, stop points)
  kInvocation,   // a choice of one invocation: not saved in config.json
};

// Help a shared row gives some of its commands instead of its own (`Setting::perCommand`).
// How a list row's text becomes its typed values (--sizes 224,288; --eval-set NAME=PATH ...):
// `parse` takes the text given (one comma-separated value; with `repeatable`, one value per
// occurrence of the flag) and the flag's name, and throws UsageError naming the flag and the
// entry for a bad one. The binder refuses such a value while parsing (exit 2).
template <typename T>
struct ListSyntax {
  std::vector<T> (*parse)(const std::vector<std::string>& given, const std::string& flag);
  bool repeatable = false;
};

struct CommandHelp {
  const char* commands;  // comma-separated command names ("export,calibrate"; "bench train")
  const char* help;
};

struct Setting {
  const char* key;    // config.json key ("" for kInvocation)
  const char* flags;  // CLI11 names, first one canonical: "--weight-path,--resnet-weight-path";
                      // "": no flag (set by the program, saved in config.json)
  const char* group;  // section of --help
  const char* help;
  Range range = {};
  SettingRole role = SettingRole::kCompared;
  // The commands whose flag this is, comma-separated ("train", "eval,predict", "bench train"),
  // or "": every command that binds it.
  const char* commands = "";
  const char* envName = "";  // environment variable that sets the flag, or ""
  // Help for some commands, ending with {nullptr, nullptr}; nullptr: `help` for all.
  const CommandHelp* perCommand = nullptr;
  // A path the command writes: never empty, and never one of the command's inputs or inside one
  // (the binder checks the first while parsing; the command the second, cli/Flags.h).
  bool outputPath = false;

  // The first of `flags` ("--weight-path"), or the key when there is no flag.
  std::string flag() const;
  // Every name of `flags`, the canonical one first ({"--batch", "--batch-size", "-b"}).
  std::vector<std::string> flagNames() const;
  // Whether the row has a flag that command `command` ("predict", "bench train") offers.
  bool offeredTo(const std::string& command) const;
  // The help `command` shows: its entry in perCommand, else `help`.
  std::string helpFor(const std::string& command) const;
  bool saved() const { return role != SettingRole::kInvocation; }
  // The same row, offered to `commandList` alone (one declaration bound by several requests).
  constexpr Setting writtenTo() const {
    Setting s = *this;
    s.outputPath = true;
    return s;
  }
  constexpr Setting offeredOnlyTo(const char* commandList) const {
    Setting s = *this;
    s.commands = commandList;
    return s;
  }
};

// UsageError "<flag> must be <range>, got <v>" unless setting.range holds v.
void checkSetting(const Setting& setting, double v);

}  // namespace fixres
