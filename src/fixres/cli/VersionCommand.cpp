// `fixres version`: our version, the LibTorch it runs on, CUDA availability, the image formats
// and downloader built in, thread count.
#include <torch/torch.h>

#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/common/Runtime.h"
#include "fixres/distributed/ProcessGroupCommunicator.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/image/Codec.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::cli {
namespace {

std::string runtimesLine() {
  const std::string ov = engine::openVinoVersion();
  return "libtorch" + (engine::openVinoBuiltIn() ? " openvino " + ov : " (built without OpenVINO)");
}

std::string cudaLine() {
  const int n = cudaDeviceCount();
  if (n > 0) return std::to_string(n) + (n == 1 ? " device" : " devices");
#ifdef FIXRES_WITH_CUDA
  return "no device";
#else
  return "unavailable (CPU build)";
#endif
}

}  // namespace

Command addVersionCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand("version", "Print versions, CUDA availability and threads");
  return {sub, []() {
            std::cout << "fixres " << fixresVersion() << "\n"
                      << "libtorch " << libtorchVersion() << ", " << buildDescription() << "\n"
                      << "collectives " << distributed::collectivesDescription() << "\n"
                      << "cuda " << cudaLine() << "\n"
                      << "images " << image::builtFormats() << "\n"
                      << "runtimes " << runtimesLine() << "\n"
                      << "exports fixres torchvision timm timm-hub onnx\n"
#if FIXRES_WITH_CURL
                      << "downloads libcurl\n"
#else
                      << "downloads none (built without libcurl)\n"
#endif
                      << "threads " << torch::get_num_threads() << "\n";
            return 0;
          }};
}

}  // namespace fixres::cli
