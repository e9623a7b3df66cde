// Config files applied to the chosen subcommand.
#include "fixres/cli/ConfigFile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <sstream>

#include "fixres/common/Files.h"

namespace fixres::cli {
namespace {

// The largest config file read: 1 MiB (a file setting every flag takes a few KB).
constexpr uint64_t kConfigFileMaxBytes = uint64_t(1) << 20;

// The deepest subcommand parsed ("bench train" -> train), and its names from the top.
CLI::App* chosenSubcommand(CLI::App& root, std::vector<std::string>& path) {
  CLI::App* app = &root;
  for (;;) {
    auto parsed = app->get_subcommands();
    if (parsed.empty()) return app == &root ? nullptr : app;
    app = parsed.front();
    path.push_back(app->get_name());
  }
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// The deepest section or dotted key a config file may hold: fixres's sections are one or two
// names ([predict], [bench.train]). Checked before CLI11 parses the file, whose work grows with
// the square of the depth.
constexpr int kMaxConfigDepth = 4;

// The text of `input`, without a leading UTF-8 byte order mark; CLI::ConfigError naming `file`
// and the line for a section header or key of more than kMaxConfigDepth dotted parts.
std::string checkedConfigText(std::istream& input, const std::string& file) {
  std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  size_t line = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    ++line;
    const size_t first = text.find_first_not_of(" \t", at);
    if (first < end && text[first] != '#') {
      // The name part: a section header up to ']', a key up to '='.
      const size_t stop = std::min(text.find(text[first] == '[' ? ']' : '=', first), end);
      int parts = 1;
      for (size_t k = first; k < stop; ++k) parts += text[k] == '.' ? 1 : 0;
      if (parts > kMaxConfigDepth)
        throw CLI::ConfigError("--config " + file + ": line " + std::to_string(line) +
                               ": a name of " + std::to_string(parts) + " dotted parts (at most " +
                               std::to_string(kMaxConfigDepth) + ")");
    }
    at = end + 1;
  }
  return text;
}

}  // namespace

CLI::Validator configFileCheck() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        // A regular file of at most kConfigFileMaxBytes, checked without blocking (a FIFO) before
        // CLI11 reads it.
        uint64_t size = 0;
        std::string why;
        const int fd = openRegularFile(path, kConfigFileMaxBytes, "config file", &size, &why);
        if (fd < 0) return why;
        ::close(fd);
        return "";
      },
      "FILE");
}

std::vector<CLI::ConfigItem> SubcommandConfig::from_config(std::istream& input) const {
  const std::string file = root_.get_config_ptr()->as<std::string>();
  std::vector<std::string> path;
  CLI::App* sub = chosenSubcommand(root_, path);
  const std::string name = path.empty() ? "fixres" : "fixres " + joined(path, " ");
  if (sub == nullptr || sub->get_option_no_throw("--config") == nullptr)
    throw CLI::ConfigError("--config " + file + ": " + name + " takes no config file");
  std::istringstream text(checkedConfigText(input, file));
  std::vector<CLI::ConfigItem> items = endsWith(file, ".ini") ? CLI::ConfigINI().from_config(text)
                                                              : CLI::ConfigTOML().from_config(text);
  for (const auto& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    if (item.parents.empty() || item.parents == path) {
      apply(*sub, file, item);
      continue;
    }
    // A section of another subcommand (one file for several) is skipped; any other is a typo.
    CLI::App* other = &root_;
    for (const auto& p : item.parents) {
      auto named = [&p](CLI::App* a) { return a->get_name() == p; };
      auto found = other == nullptr ? std::vector<CLI::App*>{} : other->get_subcommands(named);
      other = found.empty() ? nullptr : found.front();
    }
    if (other == nullptr)
      throw CLI::ConfigError("--config " + file + ": unknown section [" +
                             joined(item.parents, ".") + "] (key '" + item.name + "')");
  }
  return {};
}

void SubcommandConfig::apply(CLI::App& sub, const std::string& file,
                             const CLI::ConfigItem& item) const {
  const std::string where = "--config " + file + ": ";
  CLI::Option* op = sub.get_option_no_throw("--" + item.name);
  if (op == nullptr && item.name.size() == 1) op = sub.get_option_no_throw("-" + item.name);
  if (op == nullptr)
    throw CLI::ConfigError(where + "unknown key '" + item.name + "' (fixres " + sub.get_name() +
                           " has no --" + item.name + ")");
  if (!op->get_configurable())
    throw CLI::ConfigError(where + "'" + item.name + "' cannot be set in a config file");
  const std::string setting = item.name + " = " + joined(item.inputs, ",");
  // Given on the command line, the flag wins; the file's value is checked all the same (a
  // mistake in the file is one whatever else is given), then the command line's is put back.
  const std::vector<std::string> given = op->results();
  const bool givenRan = op->get_callback_run();
  op->clear();
  try {
    if (op->get_expected_min() == 0)
      op->add_result(op->get_flag_value(item.name, to_flag(item)));
    else
      op->add_result(item.inputs);
    op->run_callback();
  } catch (const CLI::Error& e) {
    throw CLI::ConfigError(where + setting + ": " + e.what());
  }
  if (given.empty()) {
    origins_[op->get_name()] = where + setting;
    return;
  }
  op->clear();
  op->add_result(given);
  if (givenRan) op->run_callback();
}

std::string SubcommandConfig::origin(const std::string& name) const {
  const auto it = origins_.find(name);
  return it == origins_.end() ? "" : it->second;
}

std::string SubcommandConfig::to_config(const CLI::App* app, bool defaults, bool descriptions,
                                        std::string prefix) const {
  return CLI::ConfigTOML().to_config(app, defaults, descriptions, std::move(prefix));
}

}  // namespace fixres::cli
