// `fixres finetune`: FixRes fine-tuning of the classifier and last BatchNorm at the test
// resolution.
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addFinetuneCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub = parent.add_subcommand(
      "finetune", "FixRes fine-tuning of the classifier and last BatchNorm at the test resolution");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres finetune' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
