// `fixres launch`: Start N local ranks of a fixres subcommand (torchrun-style environment).
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addLaunchCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub = parent.add_subcommand("launch", "Start N local ranks of a fixres subcommand (torchrun-style environment)");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres launch' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
