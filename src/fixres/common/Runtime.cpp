// Runtime settings shared by every subcommand.
#include "fixres/common/Runtime.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <thread>

namespace fixres {

int configureThreads(int requested) {
  int n = requested;
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(n);
  return torch::get_num_threads();
}

std::string fixresVersion() {
  return FIXRES_VERSION;
}

std::string libtorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

bool cudaAvailable() {
  return torch::cuda::is_available();
}

int cudaDeviceCount() {
  return cudaAvailable() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

}  // namespace fixres
