// Name tables of the numeric choices and their resolution for a device.
#include "fixres/engine/Numerics.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

namespace fixres::engine {

const ChoiceTable<PrecisionChoice>& precisionChoices() {
  static const ChoiceTable<PrecisionChoice> kTable = {"precision",
                                                      {{"auto", PrecisionChoice::kAuto},
                                                       {"fp32", PrecisionChoice::kFp32},
                                                       {"bf16", PrecisionChoice::kBf16}}};
  return kTable;
}

const ChoiceTable<MemoryFormatChoice>& memoryFormatChoices() {
  static const ChoiceTable<MemoryFormatChoice> kTable = {
      "memory format",
      {{"auto", MemoryFormatChoice::kAuto},
       {"contiguous", MemoryFormatChoice::kContiguous},
       {"channels-last", MemoryFormatChoice::kChannelsLast}}};
  return kTable;
}

const ChoiceTable<NormalizeOnChoice>& normalizeOnChoices() {
  static const ChoiceTable<NormalizeOnChoice> kTable = {"normalisation place",
                                                        {{"auto", NormalizeOnChoice::kAuto},
                                                         {"cpu", NormalizeOnChoice::kCpu},
                                                         {"device", NormalizeOnChoice::kDevice}}};
  return kTable;
}

Numerics resolveNumerics(const NumericsOptions& o, const torch::Device& device) {
  const bool cuda = device.is_cuda();
  Numerics n;
  n.precision = o.precision == PrecisionChoice::kBf16   ? Precision::kBf16
                : o.precision == PrecisionChoice::kFp32 ? Precision::kFp32
                : cuda                                  ? Precision::kBf16
                                                        : Precision::kFp32;
  n.channelsLast = o.memoryFormat == MemoryFormatChoice::kAuto
                       ? cuda
                       : o.memoryFormat == MemoryFormatChoice::kChannelsLast;
  n.normalizeOnDevice = o.normalizeOn == NormalizeOnChoice::kAuto
                            ? cuda
                            : o.normalizeOn == NormalizeOnChoice::kDevice;
  return n;
}

torch::Device selectDevice(int localRank, bool cpuOnly) {
  if (cpuOnly || !torch::cuda::is_available()) return torch::kCPU;
  const int n = static_cast<int>(torch::cuda::device_count());
  at::globalContext().setBenchmarkCuDNN(true);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(localRank % n));
}

RunDevice makeRunDevice(int localRank, bool cpuOnly, const NumericsOptions& numerics) {
  RunDevice r;
  r.device = selectDevice(localRank, cpuOnly);
  r.numerics = resolveNumerics(numerics, r.device);
  return r;
}

}  // namespace fixres::engine
