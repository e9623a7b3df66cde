// `fixres eval`: Top-1/top-5 and loss at one or several test resolutions.
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addEvalCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub =
      parent.add_subcommand("eval", "Top-1/top-5 and loss at one or several test resolutions");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres eval' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
