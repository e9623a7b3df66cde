// `fixres bench`: Benchmarks: data pipeline, training step, all-reduce.
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addBenchCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub =
      parent.add_subcommand("bench", "Benchmarks: data pipeline, training step, all-reduce");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres bench' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
