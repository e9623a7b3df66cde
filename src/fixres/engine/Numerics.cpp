// Name tables of the numeric choices and their resolution for a device.
#include "fixres/engine/Numerics.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "fixres/common/Error.h"
#include "fixres/data/GpuJpeg.h"

namespace fixres::engine {

const NumericsChoices& numericsChoices() {
  using P = PrecisionChoice;
  using M = MemoryFormatChoice;
  using N = NormalizeOnChoice;
  using D = DecodeOnChoice;
  static const NumericsChoices kChoices{
      {"precision",
       {{"auto", P::kAuto}, {"fp32", P::kFp32}, {"bf16", P::kBf16}, {"fp16", P::kFp16}}},
      {"memory format",
       {{"auto", M::kAuto}, {"contiguous", M::kContiguous}, {"channels-last", M::kChannelsLast}}},
      {"normalisation place", {{"auto", N::kAuto}, {"cpu", N::kCpu}, {"device", N::kDevice}}},
      {"decoding place", {{"auto", D::kAuto}, {"cpu", D::kCpu}, {"gpu", D::kGpu}}}};
  return kChoices;
}

Numerics resolveNumerics(const NumericsOptions& o, const torch::Device& device) {
  const bool cuda = device.is_cuda();
  Numerics n;
  FIXRES_CHECK(o.precision != PrecisionChoice::kFp16 || cuda, UsageError,
               "--precision fp16 needs CUDA (this LibTorch's CPU autocast supports bf16 only: use "
               "--precision bf16 or fp32)");
  n.precision = o.precision == PrecisionChoice::kFp16   ? Precision::kFp16
                : o.precision == PrecisionChoice::kBf16 ? Precision::kBf16
                : o.precision == PrecisionChoice::kFp32 ? Precision::kFp32
                : cuda                                  ? Precision::kBf16
                                                        : Precision::kFp32;
  n.channelsLast = o.memoryFormat == MemoryFormatChoice::kAuto
                       ? cuda
                       : o.memoryFormat == MemoryFormatChoice::kChannelsLast;
  n.normalizeOnDevice = o.normalizeOn == NormalizeOnChoice::kAuto
                            ? cuda
                            : o.normalizeOn == NormalizeOnChoice::kDevice;
  const std::string noGpuJpeg = data::whyNoGpuJpeg(device);
  FIXRES_CHECK(o.decodeOn != DecodeOnChoice::kGpu || noGpuJpeg.empty(), UsageError,
               "--decode-on gpu: ", noGpuJpeg);
  if (o.decodeOn == DecodeOnChoice::kGpu) n.gpuDecode = Numerics::GpuDecode::kRequired;
  if (o.decodeOn == DecodeOnChoice::kAuto && noGpuJpeg.empty())
    n.gpuDecode = Numerics::GpuDecode::kWherePossible;
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
