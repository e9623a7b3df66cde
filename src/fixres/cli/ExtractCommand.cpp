// `fixres extract`: Write labels, softmax, logits and embeddings as .npy files.
#include "fixres/cli/Command.h"
#include "fixres/common/Error.h"

namespace fixres::cli {

Command addExtractCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub = parent.add_subcommand("extract",
                                    "Write labels, softmax, logits and embeddings as .npy files");
  return {sub, []() -> int {
            FIXRES_FAIL(InternalError, "'fixres extract' is not available in this build yet");
          }};
}

}  // namespace fixres::cli
