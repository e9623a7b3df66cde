// `fixres bench`: Benchmarks: data pipeline, training step, all-reduce.
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

// Defined in BenchDataCommand.cpp: `fixres bench data`.
void addBenchDataSubcommand(CLI::App& bench, GlobalOptions& global, std::function<int()>& action);

Command addBenchCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub =
      parent.add_subcommand("bench", "Benchmarks: data pipeline, training step, all-reduce");
  auto action = std::make_shared<std::function<int()>>();
  addBenchDataSubcommand(*sub, global, *action);
  return {sub, [action]() -> int {
            if (*action) return (*action)();
            FIXRES_FAIL(UsageError,
                        "'fixres bench' needs a benchmark: data (see 'fixres bench --help')");
          }};
}

}  // namespace fixres::cli
