// `fixres eval-softmax`: Top-1/top-5 from saved softmax and labels (.npy).
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addEvalSoftmaxCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub =
      parent.add_subcommand("eval-softmax", "Top-1/top-5 from saved softmax and labels (.npy)");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres eval-softmax' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
