// Name tables of the numeric choices and their resolution for a device.
#include "fixres/runtime/Numerics.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "fixres/common/Error.h"
#include "fixres/data/GpuJpeg.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {

const NumericsChoices& numericsChoices() {
  using P = PrecisionChoice;
  using M = MemoryFormatChoice;
  using N = NormalizeOnChoice;
  using D = DecodeOnChoice;
  using R = RuntimeChoice;
  static const NumericsChoices kChoices{
      {"precision",
       {{"auto", P::kAuto}, {"fp32", P::kFp32}, {"bf16", P::kBf16}, {"fp16", P::kFp16}}},
      {"memory format",
       {{"auto", M::kAuto}, {"contiguous", M::kContiguous}, {"channels-last", M::kChannelsLast}}},
      {"normalisation place", {{"auto", N::kAuto}, {"cpu", N::kCpu}, {"device", N::kDevice}}},
      {"decoding place", {{"auto", D::kAuto}, {"cpu", D::kCpu}, {"gpu", D::kGpu}}},
      {"runtime", {{"libtorch", R::kLibTorch}, {"openvino", R::kOpenVino}, {"auto", R::kAuto}}}};
  return kChoices;
}

namespace {

void resolveRuntime(const NumericsOptions& o, bool cuda, Numerics& n) {
  if (o.runtime == RuntimeChoice::kLibTorch) return;
  if (o.runtime == RuntimeChoice::kAuto) {
    // Never a lower precision than asked: auto with bf16 takes OpenVINO only where it has bf16.
    if (!cuda && openVinoBuiltIn() && openVinoSupports(n.precision)) n.runtime = Runtime::kOpenVino;
  } else {
    requireOpenVino("--runtime openvino");
    FIXRES_CHECK(
        !cuda, UsageError,
        "--runtime openvino runs on the CPU: add --cpu, or use --runtime libtorch on CUDA");
    FIXRES_CHECK(n.precision != Precision::kFp16, UsageError,
                 "--runtime openvino runs --precision fp32 or bf16, not fp16");
    FIXRES_CHECK(openVinoSupports(n.precision), UsageError,
                 "--precision bf16 --runtime openvino: this CPU has no bf16 in OpenVINO (its CPU "
                 "plugin does not list BF16); use --precision fp32");
    n.runtime = Runtime::kOpenVino;
  }
  if (n.runtime == Runtime::kOpenVino) n.channelsLast = false;  // OpenVINO takes NCHW
}

}  // namespace

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
  resolveRuntime(o, cuda, n);
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
