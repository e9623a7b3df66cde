// `fixres version`: our version, the LibTorch it runs on, CUDA availability, thread count.
#include <torch/torch.h>

#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/common/Runtime.h"

namespace fixres::cli {

Command addVersionCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand("version", "Print versions, CUDA availability and threads");
  return {sub, []() {
            std::cout << "fixres " << fixresVersion() << "\n"
                      << "libtorch " << libtorchVersion() << "\n"
                      << "cuda " << (cudaAvailable() ? "available" : "unavailable") << " ("
                      << cudaDeviceCount() << " devices)\n"
                      << "threads " << torch::get_num_threads() << "\n";
            return 0;
          }};
}

}  // namespace fixres::cli
