// Subcommand registration: each cli/<Name>Command.cpp declares its options once and returns
// the action to run after parsing. Libraries below cli/ never see argv.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"

namespace fixres::cli {

// Options every subcommand accepts.
struct GlobalOptions {
  int threads = 0;           // intra-op threads; 0 = all hardware threads
  bool logAllRanks = false;  // progress lines from every rank, not only rank 0
  bool verbose = false;
  bool quiet = false;

  // The options before the subcommand, one row each.
  template <typename Self, typename V>
  static void visitSettings(Self& g, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    v(Setting{"", "--threads", "Options", "Intra-op CPU threads (0 = all hardware threads)",
              Range::integers(0, 1024), kInvocation, "", "FIXRES_THREADS"},
      g.threads);
    v(Setting{"",
              "--log-all-ranks",
              "Options",
              "Progress lines from every rank, not only rank 0",
              {},
              kInvocation},
      g.logAllRanks);
    v(Setting{"", "-v,--verbose", "Options", "Debug log lines", {}, kInvocation}, g.verbose);
    v(Setting{"", "-q,--quiet", "Options", "Warnings and errors only", {}, kInvocation}, g.quiet);
  }
};

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the process exit code
};

Command addVersionCommand(CLI::App& parent);
Command addTrainCommand(CLI::App& parent);
Command addFinetuneCommand(CLI::App& parent);  // in TrainCommand.cpp
Command addEvalCommand(CLI::App& parent);
Command addExtractCommand(CLI::App& parent);
Command addEvalSoftmaxCommand(CLI::App& parent);  // in ExtractCommand.cpp
Command addLaunchCommand(CLI::App& parent);
Command addBenchCommand(CLI::App& parent);
Command addSuggestResolutionCommand(CLI::App& parent);
Command addImportCommand(CLI::App& parent);
Command addSweepCommand(CLI::App& parent);
Command addExportCommand(CLI::App& parent);
Command addPredictCommand(CLI::App& parent);
Command addWeightsCommand(CLI::App& parent);
Command addCalibrateCommand(CLI::App& parent);
Command addPlotCommand(CLI::App& parent);
Command addShardCommand(CLI::App& parent);
Command addHoldoutCommand(CLI::App& parent);
Command addSettingsCommand(CLI::App& parent);

// The whole command tree on `app`: global options (bound to `global`) and every subcommand.
std::vector<Command> buildCli(CLI::App& app, GlobalOptions& global);

// Builds the whole CLI, parses argv, runs the chosen subcommand; maps every error to one
// "fixres: error: ..." line on stderr and its exit code.
int runCli(int argc, char** argv);

}  // namespace fixres::cli
