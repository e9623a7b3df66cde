// Runtime settings shared by every subcommand.
#include "fixres/common/Runtime.h"

#include <ATen/Parallel.h>
#include <malloc.h>
#include <torch/cuda.h>
#include <torch/version.h>
#ifdef FIXRES_WITH_CUDA
#include <ATen/detail/CUDAHooksInterface.h>
#endif

#include <algorithm>
#include <csignal>
#include <thread>

namespace fixres {

void configureProcess() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  // Image buffers (decoded, resized: up to tens of MB) are allocated and freed for every sample.
  // Keep them in the heap instead of a fresh mmap each time, and do not hand freed memory back
  // to the kernel at every free: page faults were about 9% of the data pipeline's time.
  ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int configureThreads(int requested) {
  int n = requested;
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n);
  return at::get_num_threads();
}

std::string fixresVersion() {
  return FIXRES_VERSION;
}

std::string libtorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

std::string buildDescription() {
#ifdef FIXRES_WITH_CUDA
  // Both numbers are the ones libtorch_cuda was compiled with (CUDART_VERSION, CUDNN_VERSION),
  // known without a device: 13000 is CUDA 13.0, 91900 cuDNN 9.19.0.
  const auto& hooks = at::detail::getCUDAHooks();
  const long cuda = hooks.versionCUDART();
  std::string out =
      "CUDA build (CUDA " + std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
  try {
    const long cudnn = hooks.versionCuDNN();
    out += ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn % 10000 / 100) +
           "." + std::to_string(cudnn % 100);
  } catch (const std::exception&) {
    out += ", no cuDNN";
  }
  return out + ")";
#else
  return "CPU build";
#endif
}

bool cudaAvailable() {
  return torch::cuda::is_available();
}

int cudaDeviceCount() {
  return cudaAvailable() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

}  // namespace fixres
