// `fixres train`: Train a classifier from scratch (FixRes recipe: RandomResizedCrop at a low
// resolution).
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addTrainCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub = parent.add_subcommand(
      "train",
      "Train a classifier from scratch (FixRes recipe: RandomResizedCrop at a low resolution)");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres train' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
