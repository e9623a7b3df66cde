// Peak memory and time of loading a weights file into a freshly built model, lazily (record by
// record, loadWeightsFile) or eagerly (readTorchFile + loadStateDict). Not a Google Benchmark:
// run it under /usr/bin/time -v (see weight_load_memory.sh and weight_load_memory.md).
// Usage: weight_load_memory_bench ARCH WEIGHTS.pth [lazy|eager]
#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace {

// VmRSS / VmHWM of this process in MiB, from /proc/self/status.
double procStatusMiB(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return -1;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " ARCH WEIGHTS.pth [lazy|eager]\n";
    return 2;
  }
  const std::string arch = argv[1], path = argv[2], mode = argc > 3 ? argv[3] : "lazy";
  try {
    torch::set_num_threads(1);
    auto t0 = std::chrono::steady_clock::now();
    auto model = fixres::models::createModel(arch);
    double built = secondsSince(t0);
    double rssModel = procStatusMiB("VmRSS");
    t0 = std::chrono::steady_clock::now();
    fixres::models::LoadReport report;
    if (mode == "eager") {
      report = fixres::models::loadStateDict(*model, fixres::models::readTorchFile(path), {}, path);
    } else {
      report = fixres::models::loadWeightsFile(*model, path, {});
    }
    double loaded = secondsSince(t0);
    double sum = 0;
    for (const auto& p : model->parameters()) sum += p.sum().item<double>();
    std::cout << "arch " << arch << " mode " << mode << ": built in " << built << " s (RSS "
              << rssModel << " MiB), loaded " << report.loaded << " tensors in " << loaded
              << " s; RSS now " << procStatusMiB("VmRSS") << " MiB, peak " << procStatusMiB("VmHWM")
              << " MiB; parameter sum " << sum << "\n";
  } catch (const fixres::Error& e) {
    std::cerr << "error: " << fixres::oneLine(e.what()) << "\n";
    return static_cast<int>(e.code());
  }
  return 0;
}
