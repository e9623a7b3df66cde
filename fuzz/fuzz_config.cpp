// --config files (TOML, or INI when the name ends in .ini) from arbitrary bytes, through the
// formatter every subcommand's --config uses (SubcommandConfig: the depth check, CLI11's parser,
// each key applied to the chosen subcommand with its flag's checks): the values or a CLI::Error,
// nothing else, and memory bounded by the 1 MiB file limit. The first byte chooses the form
// (even: TOML, odd: INI); the rest is the file. The app is a small stand-in for fixres's own:
// two subcommands, one nested, with flags of each kind a fixres setting has.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fixres/cli/ConfigFile.h"

namespace {

struct Values {
  int topk = 5;
  double lr = 0.1;
  std::string out;
  std::vector<int> sizes;
  bool flag = false;
};

// Adds the flags of a fixres subcommand, --config as Flags.cpp's addConfigFile adds it.
void addFlags(CLI::App& sub, CLI::Option* carrier, Values& v) {
  sub.add_option("--topk", v.topk)->check(CLI::Range(1, 1000));
  sub.add_option("--lr", v.lr)->check(CLI::Range(0.0, 10.0));
  sub.add_option("--out", v.out);
  sub.add_option("--input-size", v.sizes)->delimiter(',')->check(CLI::Range(8, 4096));
  sub.add_flag("--cpu", v.flag);
  sub.add_option_function<std::string>(
         "--config", [carrier](const std::string& path) { carrier->add_result(path); }, "config")
      ->trigger_on_parse()
      ->configurable(false);
}

std::string writeFile(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fixres-fuzz-config-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    return std::string(tmpl);
  }();
  const std::string file =
      writeFile(dir + ((data[0] & 1) ? "/fuzz.ini" : "/fuzz.toml"), data + 1, size - 1);
  Values predict, train;
  CLI::App root("fuzz");
  CLI::Option* carrier = root.set_config("--root-config");
  root.config_formatter(std::make_shared<fixres::cli::SubcommandConfig>(root));
  addFlags(*root.add_subcommand("predict"), carrier, predict);
  CLI::App* bench = root.add_subcommand("bench");
  addFlags(*bench->add_subcommand("train"), carrier, train);
  const bool nested = (data[0] & 2) != 0;
  std::vector<std::string> args =
      nested ? std::vector<std::string>{file, "--config", "train", "bench"}
             : std::vector<std::string>{file, "--config", "predict"};  // reversed, as CLI11 takes
  try {
    root.parse(args);
  } catch (const CLI::Error&) {
  }
  return 0;
}
