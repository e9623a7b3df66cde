// The numeric choices of a run (precision, memory format, where uint8 images are normalised),
// as typed options with their name tables, and their resolution for a device: `auto` means
// bf16 + channels-last + normalisation on the device on CUDA, fp32 + NCHW + CPU otherwise.
#pragma once

#include <torch/types.h>

#include <optional>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"
#include "fixres/runtime/Precision.h"

namespace fixres::engine {

enum class PrecisionChoice { kAuto, kFp32, kBf16, kFp16 };
enum class MemoryFormatChoice { kAuto, kContiguous, kChannelsLast };
enum class NormalizeOnChoice { kAuto, kCpu, kDevice };
enum class DecodeOnChoice { kAuto, kCpu, kGpu };
enum class RuntimeChoice { kLibTorch, kOpenVino, kAuto };
// The runtime a model is run with (docs/runtimes.md): LibTorch, or OpenVINO on the CPU from
// fixres's own ONNX graph (OpenVinoModel.h). Training and calibration always run LibTorch.
enum class Runtime { kLibTorch, kOpenVino };
inline const char* runtimeName(Runtime r) {
  return r == Runtime::kOpenVino ? "openvino" : "libtorch";
}

struct NumericsChoices {
  ChoiceTable<PrecisionChoice> precision;        // auto, fp32, bf16, fp16
  ChoiceTable<MemoryFormatChoice> memoryFormat;  // auto, contiguous, channels-last
  ChoiceTable<NormalizeOnChoice> normalizeOn;    // auto, cpu, device
  ChoiceTable<DecodeOnChoice> decodeOn;          // auto, cpu, gpu
  ChoiceTable<RuntimeChoice> runtime;            // libtorch, openvino, auto
};
const NumericsChoices& numericsChoices();

// The numeric rows, shared by the training runs' options and the inference commands' request.
inline constexpr Setting kPrecisionRow{
    "precision", "--precision", "Numerics",
    "auto (bf16 autocast on CUDA, fp32 on CPU), fp32, bf16 or fp16 (CUDA only; training adds "
    "dynamic loss scaling); eval, predict, extract: a sweep folder's recorded choice unless "
    "given, else auto"};
inline constexpr Setting kMemoryFormatRow{
    "memory_format", "--memory-format", "Numerics",
    "auto (channels-last on CUDA), contiguous or channels-last"};
inline constexpr Setting kNormalizeOnRow{
    "normalize_on", "--normalize-on", "Numerics",
    "auto (device on CUDA), cpu or device: where uint8 images become normalised floats (device: 4x "
    "smaller batches to copy)"};
inline constexpr Setting kDecodeOnRow{
    "decode_on", "--decode-on", "Numerics",
    "auto (gpu on CUDA when the build has nvJPEG), cpu (the loader's worker threads) or gpu: JPEGs "
    "decoded in batches by nvJPEG and cropped, resized, flipped and normalised on the GPU, for the "
    "transforms that allow it (torch, val; the others stay on the CPU, an error with gpu)"};
inline constexpr Setting kRuntimeRow{
    "",
    "--runtime",
    "Numerics",
    "libtorch, openvino (the model compiled by OpenVINO from fixres's ONNX graph, on the CPU; "
    "--precision fp32 or bf16) or auto (OpenVINO in fp32 where the build has it and the model runs "
    "on the CPU, else LibTorch): what runs the model (default: a sweep folder's recorded choice, "
    "else libtorch)",
    {},
    SettingRole::kInvocation,
    "eval,predict,extract,sweep,bench eval"};

// The numeric rows over the fields of NumericsOptions or NumericsRequest (the same names).
template <typename N, typename V>
void visitNumericsRows(N& n, V&& v) {
  const NumericsChoices& c = numericsChoices();
  v(kPrecisionRow, n.precision, c.precision);
  v(kMemoryFormatRow, n.memoryFormat, c.memoryFormat);
  v(kNormalizeOnRow, n.normalizeOn, c.normalizeOn);
  v(kDecodeOnRow, n.decodeOn, c.decodeOn);
  v(kRuntimeRow, n.runtime, c.runtime);
}

// As given on the command line of a training run or a benchmark (--precision, --memory-format,
// --normalize-on, --decode-on, --runtime).
struct NumericsOptions {
  PrecisionChoice precision = PrecisionChoice::kAuto;
  MemoryFormatChoice memoryFormat = MemoryFormatChoice::kAuto;
  NormalizeOnChoice normalizeOn = NormalizeOnChoice::kAuto;
  DecodeOnChoice decodeOn = DecodeOnChoice::kAuto;
  RuntimeChoice runtime = RuntimeChoice::kLibTorch;

  template <typename Self, typename V>
  static void visitSettings(Self& n, V&& v) {
    visitNumericsRows(n, v);
  }
};

// As an inference command is given them: --precision and --runtime unset when not given (a model
// folder's recorded choice applies before the defaults: ResolvedModel::numerics).
struct NumericsRequest {
  std::optional<PrecisionChoice> precision;
  MemoryFormatChoice memoryFormat = MemoryFormatChoice::kAuto;
  NormalizeOnChoice normalizeOn = NormalizeOnChoice::kAuto;
  DecodeOnChoice decodeOn = DecodeOnChoice::kAuto;
  std::optional<RuntimeChoice> runtime;

  // The options, with auto precision and LibTorch where not given.
  NumericsOptions options() const {
    NumericsOptions o;
    o.precision = precision.value_or(o.precision);
    o.memoryFormat = memoryFormat;
    o.normalizeOn = normalizeOn;
    o.decodeOn = decodeOn;
    o.runtime = runtime.value_or(o.runtime);
    return o;
  }

  template <typename Self, typename V>
  static void visitSettings(Self& n, V&& v) {
    visitNumericsRows(n, v);
  }
};

// Resolved for one device.
struct Numerics {
  Precision precision = Precision::kFp32;
  bool channelsLast = false;       // model and inputs in channels-last
  bool normalizeOnDevice = false;  // the loader hands over uint8; normalised where the model runs
  // JPEGs decoded on the GPU where the transform allows it (auto), or everywhere (required:
  // --decode-on gpu, an error for a transform without a GPU path).
  enum class GpuDecode { kNo, kWherePossible, kRequired } gpuDecode = GpuDecode::kNo;
  Runtime runtime = Runtime::kLibTorch;
};

// UsageError naming --precision for fp16 on a device without fp16 autocast (LibTorch's CPU
// autocast supports bf16 only); naming --runtime for openvino on CUDA or in a build without it,
// and for bf16 on a CPU whose OpenVINO plugin lacks it. With OpenVINO the inputs stay NCHW.
Numerics resolveNumerics(const NumericsOptions& options, const torch::Device& device);

// Where a rank's model runs and with which numerics: what the model, the loader and the batch
// path all need to agree on.
struct RunDevice {
  torch::Device device = torch::kCPU;
  Numerics numerics;
};

// cuda:<localRank % devices> when CUDA is available and `cpuOnly` is false, else the CPU. On
// CUDA, cuDNN benchmark mode is switched on here (fixed input shapes: each shape's fastest
// algorithm is timed once, as torch.backends.cudnn.benchmark = True); nowhere else sets it.
torch::Device selectDevice(int localRank, bool cpuOnly);

// selectDevice, then the numerics resolved for that device.
RunDevice makeRunDevice(int localRank, bool cpuOnly, const NumericsOptions& numerics);

}  // namespace fixres::engine
