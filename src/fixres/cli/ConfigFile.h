// Config files of the subcommands (--config, see addConfigFile in Flags.h): CLI11 reads config
// files for the top-level app only; this formatter applies one to the subcommand chosen on the
// command line, refusing what does not belong to it.
#pragma once

#include <CLI/CLI.hpp>

#include <istream>
#include <map>
#include <string>
#include <vector>

namespace fixres::cli {

// Refuses a path that is not a readable regular file: "cannot read config file P: <reason>".
CLI::Validator configFileCheck();

// The formatter of the top-level app `root`. from_config() parses the file given to --config
// (TOML, or INI when its name ends in .ini) and applies each `key = value` to the deepest
// subcommand parsed, unless that flag was given on the command line (the file's value is checked
// all the same); it returns no items (none is left for CLI11 to apply). CLI::ConfigError (exit 2)
// naming the file and the key for an unknown key or section, a key that is not a flag of the
// subcommand, a bad value (also one the command line overrides), or a subcommand that takes no
// --config.
class SubcommandConfig : public CLI::Config {
 public:
  explicit SubcommandConfig(CLI::App& root) : root_(root) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
  std::string to_config(const CLI::App* app, bool defaults, bool descriptions,
                        std::string prefix) const override;

  // "--config F: key = value" when the value of flag `name` ("--momentum") came from the file,
  // else "".
  std::string origin(const std::string& name) const;

 private:
  void apply(CLI::App& sub, const std::string& file, const CLI::ConfigItem& item) const;

  CLI::App& root_;
  mutable std::map<std::string, std::string> origins_;  // by flag name
};

}  // namespace fixres::cli
