// Process-wide runtime settings: intra-op thread count and a description of the LibTorch build.
#pragma once

#include <string>

namespace fixres {

// Process-wide settings every fixres process starts with: SIGPIPE and SIGXFSZ ignored (a
// vanished peer or a file size limit surfaces as an error from the call, not a kill), and
// malloc keeping image-sized buffers in the heap.
void configureProcess();

// Sets LibTorch's intra-op thread count. requested <= 0 means "all hardware threads"
// (LibTorch's own default on Debian is 1). Returns the count in effect.
int configureThreads(int requested);

std::string fixresVersion();
std::string libtorchVersion();
// "CPU build", or "CUDA build (CUDA 13.0, cuDNN 9.19.0)": what the LibTorch was compiled with,
// whether or not a GPU is present.
std::string buildDescription();
bool cudaAvailable();
int cudaDeviceCount();

}  // namespace fixres
