// The table of shared flags, the value checks and --config.
#include "fixres/cli/Flags.h"

#include <algorithm>
#include <cstdint>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "fixres/cli/ConfigFile.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Error.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::cli {
namespace {

// The whole of `text` as an integer (false for anything else, out-of-range values included).
bool parseWholeInt(const std::string& text, int64_t& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

std::string rangeText(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

CLI::Validator intIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        int64_t x = 0;
        if (parseWholeInt(v, x) && x >= lo && x <= hi) return "";
        return "must be an integer in " + rangeText(lo, hi) + ", got '" + v + "'";
      },
      rangeText(lo, hi));
}

CLI::Validator allOrAtLeastOne(int64_t hi) {
  const std::string text = hi == INT64_MAX ? "-1 (all) or a positive integer"
                                           : "-1 (all) or an integer in " + rangeText(1, hi);
  return CLI::Validator(
      [hi, text](std::string& v) -> std::string {
        int64_t x = 0;
        if (parseWholeInt(v, x) && (x == -1 || (x >= 1 && x <= hi))) return "";
        return "must be " + text + ", got '" + v + "'";
      },
      hi == INT64_MAX ? "-1 or >= 1" : "-1 or " + rangeText(1, hi));
}

CLI::Validator finiteIn(double lo, double hi, bool openLow) {
  std::ostringstream range;
  range << (openLow ? "(" : "[") << lo << ", " << hi << "]";
  const std::string text = range.str();
  return CLI::Validator(
      [lo, hi, openLow, text](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
        const bool whole = !v.empty() && end == v.c_str() + v.size();
        if (whole && std::isfinite(x) && (openLow ? x > lo : x >= lo) && x <= hi) return "";
        return "must be a finite number in " + text + ", got '" + v + "'";
      },
      text);
}

CLI::Validator intListIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        std::stringstream ss(v);
        std::string item;
        bool ok = !v.empty() && v.back() != ',';
        int64_t x = 0;
        while (ok && std::getline(ss, item, ',')) ok = parseWholeInt(item, x) && x >= lo && x <= hi;
        if (ok) return "";
        return "must be integers in " + rangeText(lo, hi) + " separated by commas, got '" + v + "'";
      },
      rangeText(lo, hi));
}

CLI::Validator rangeValidator(const Range& range) {
  const std::string text = range.describe();
  return CLI::Validator(
      [range, text](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
        int64_t whole = 0;
        const bool integer = range.kind == Range::Kind::kInteger;
        const bool number = integer ? parseWholeInt(v, whole) : end == v.c_str() + v.size();
        if (number && range.contains(integer ? static_cast<double>(whole) : x)) return "";
        return "must be " + text + ", got '" + v + "'";
      },
      range.brief());
}

namespace {

namespace fs = std::filesystem;

// Absolute, normalised, links resolved as far as the path exists, no trailing "/".
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) p = fs::absolute(path, ec).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

bool isInside(const fs::path& path, const fs::path& dir) {
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

}  // namespace

void checkOutputPath(const std::string& flag, const std::string& path,
                     const std::vector<NamedPath>& inputs) {
  FIXRES_CHECK(!path.empty(), UsageError, flag, " must not be empty");
  const fs::path out = resolved(path);
  for (const auto& in : inputs) {
    if (in.path.empty()) continue;
    const fs::path p = resolved(in.path);
    FIXRES_CHECK(out != p, UsageError, flag, " ", path, " is ", in.flag, " ", in.path,
                 ": an output must not overwrite an input");
    FIXRES_CHECK(!isInside(out, p), UsageError, flag, " ", path, " is inside ", in.flag, " ",
                 in.path, ": an output must not be written into an input");
    FIXRES_CHECK(!isInside(p, out), UsageError, in.flag, " ", in.path, " is inside ", flag, " ",
                 path, ": an output must not hold an input");
  }
}

std::vector<NamedPath> givenInputs(const CLI::App& app, const std::vector<std::string>& outputs) {
  std::vector<NamedPath> inputs;
  auto add = [&inputs](const CLI::Option& o) {
    if (o.count() == 0) return;
    const std::string name = o.get_positional() ? o.get_name(true) : o.get_name();
    for (const std::string& v : o.results()) {
      std::error_code ec;
      if (v.empty() || v == "-" || v.find("://") != std::string::npos || !fs::exists(v, ec))
        continue;
      inputs.push_back({name, v});
    }
  };
  for (const CLI::Option* o : app.get_options()) {
    if (std::find(outputs.begin(), outputs.end(), o->get_name()) == outputs.end()) add(*o);
  }
  const CLI::App* root = &app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  if (const CLI::Option* config = root->get_config_ptr(); config != nullptr) add(*config);
  return inputs;
}

CLI::Validator outputPathValidator(const std::string& flag) {
  return CLI::Validator(
      [flag](std::string& v) -> std::string {
        try {
          checkOutputPath(flag, v);
          return "";
        } catch (const UsageError&) {
          return "must not be empty";
        }
      },
      "");
}

namespace {

struct RowCollector {
  std::vector<Setting>& rows;
  template <typename T>
  void operator()(const Setting& row, const T&) {
    if (row.flags[0] != '\0') rows.push_back(row);
  }
  template <typename T, typename E>
  void operator()(const Setting& row, const T& t, const ChoiceTable<E>&) {
    (*this)(row, t);
  }
};

}  // namespace

// The flags of one invocation (cli/SharedRows.h), in the order `fixres settings` lists them.
const std::vector<Setting>& invocationRows() {
  static const std::vector<Setting> kRows = {
      kPretrainedRow,    kCacheDirRow,    kDownloadTimeoutRow,
      kImnetPathRow,     kDatasetPathRow, kNoIndexCacheRow,
      kNoTensorboardRow, kCpuRow,         kTrainSizeRow,
      kFinetuneRow,      kOutRow,         kClassNamesRow,
      kLicenseRow,       kSavePathRow,    kConfigRow};
  return kRows;
}

const std::vector<Setting>& sharedFlags() {
  static const std::vector<Setting> kFlags = [] {
    std::vector<Setting> rows;
    const auto run = engine::RunConfig::forMode(engine::RunMode::kTrain);
    engine::RunConfig::visitSettings(run, RowCollector{rows});
    for (const Setting& row : invocationRows()) rows.push_back(row);
    return rows;
  }();
  return kFlags;
}

std::string commandName(const CLI::App& app) {
  std::string name;
  for (const CLI::App* a = &app; a->get_parent() != nullptr; a = a->get_parent())
    name = a->get_name() + (name.empty() ? "" : " " + name);
  return name;
}

namespace {
CLI::Option* finish(CLI::Option* opt, const Setting& row) {
  opt->group(row.group);
  if (row.envName[0] != '\0') opt->envname(row.envName);
  return opt;
}
}  // namespace

CLI::Option* bindSetting(CLI::App& app, const Setting& row, bool& target) {
  if (row.flag().rfind("--no-", 0) == 0)
    return finish(app.add_flag_callback(
                      row.flags, [&target] { target = false; }, row.helpFor(commandName(app))),
                  row);
  return finish(app.add_flag(row.flags, target, row.helpFor(commandName(app))), row);
}

CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::string& target) {
  auto* opt = finish(
      app.add_option(row.flags, target, row.helpFor(commandName(app)))->capture_default_str(), row);
  if (row.outputPath) opt->check(outputPathValidator(row.flag()));
  if (row.range.kind == Range::Kind::kInteger)
    opt->check(intListIn(static_cast<int64_t>(row.range.lo), static_cast<int64_t>(row.range.hi)));
  return opt;
}

CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::vector<std::string>& target) {
  // Repeatable: every occurrence adds one value.
  return finish(app.add_option(row.flags, target, row.helpFor(commandName(app)))
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll),
                row);
}

CLI::Option* bindSetting(CLI::App& app, const Setting& row, std::vector<float>& target) {
  return finish(app.add_option(row.flags, target, row.helpFor(commandName(app)))->expected(3), row);
}

CLI::Option* addConfigFile(CLI::App& app) {
  const Setting& f = kConfigRow;
  CLI::App* root = &app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  // CLI11 reads config files for the top-level app only, after the whole command line and
  // before it checks required flags: the subcommand's --config hands its file to the top-level
  // one, and the formatter applies the file to the subcommand that was chosen.
  CLI::Option* carrier = root->get_config_ptr();
  if (carrier == nullptr) {
    carrier = root->set_config(f.flags, "", f.help)->group(f.group)->check(configFileCheck());
    root->config_formatter(std::make_shared<SubcommandConfig>(*root));
  }
  return app
      .add_option_function<std::string>(
          f.flags,
          [carrier](const std::string& path) {
            if (carrier->count() > 0)
              throw CLI::ValidationError("--config", "given more than once ('" + path + "')");
            carrier->add_result(path);
          },
          f.help)
      ->trigger_on_parse()
      ->configurable(false)
      ->check(configFileCheck())
      ->group(f.group);
}

void checkMerged(CLI::App& app, const std::function<void()>& check) {
  std::string message;
  try {
    check();
    return;
  } catch (const UsageError& e) {
    message = e.what();
  } catch (const CLI::ValidationError& e) {
    message = e.what();
  }
  const CLI::App* root = &app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  const auto config = std::dynamic_pointer_cast<SubcommandConfig>(root->get_config_formatter());
  // The flags the message names, in order: "--" then letters, digits and dashes.
  for (size_t at = message.find("--"); config && at != std::string::npos;
       at = message.find("--", at + 2)) {
    size_t end = at + 2;
    while (end < message.size() &&
           (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-'))
      ++end;
    const std::string origin = config->origin(message.substr(at, end - at));
    if (!origin.empty()) throw CLI::ValidationError(origin + ": " + message);
  }
  throw CLI::ValidationError(message);
}

}  // namespace fixres::cli
