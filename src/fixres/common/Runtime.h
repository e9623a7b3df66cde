// Process-wide runtime settings: intra-op thread count and a description of the LibTorch build.
#pragma once

#include <string>

namespace fixres {

// Sets LibTorch's intra-op thread count. requested <= 0 means "all hardware threads"
// (LibTorch's own default on Debian is 1). Returns the count in effect.
int configureThreads(int requested);

std::string fixresVersion();
std::string libtorchVersion();
bool cudaAvailable();
int cudaDeviceCount();

}  // namespace fixres
