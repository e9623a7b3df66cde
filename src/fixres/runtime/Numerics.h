// The numeric choices of a run (precision, memory format, where uint8 images are normalised),
// as typed options with their name tables, and their resolution for a device: `auto` means
// bf16 + channels-last + normalisation on the device on CUDA, fp32 + NCHW + CPU otherwise.
#pragma once

#include <torch/types.h>

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

// As given on the command line (--precision, --memory-format, --normalize-on).
struct NumericsOptions {
  PrecisionChoice precision = PrecisionChoice::kAuto;
  MemoryFormatChoice memoryFormat = MemoryFormatChoice::kAuto;
  NormalizeOnChoice normalizeOn = NormalizeOnChoice::kAuto;
  DecodeOnChoice decodeOn = DecodeOnChoice::kAuto;
  RuntimeChoice runtime = RuntimeChoice::kLibTorch;

  template <typename Self, typename V>
  static void visitSettings(Self& n, V&& v) {
    v(Setting{"precision", "--precision", "Numerics",
              "auto (bf16 autocast on CUDA, fp32 on CPU), fp32, bf16 or fp16 (CUDA only; training "
              "adds dynamic loss scaling)"},
      n.precision, numericsChoices().precision);
    v(Setting{"memory_format", "--memory-format", "Numerics",
              "auto (channels-last on CUDA), contiguous or channels-last"},
      n.memoryFormat, numericsChoices().memoryFormat);
    v(Setting{"normalize_on", "--normalize-on", "Numerics",
              "auto (device on CUDA), cpu or device: where uint8 images become normalised floats "
              "(device: 4x smaller batches to copy)"},
      n.normalizeOn, numericsChoices().normalizeOn);
    v(Setting{"decode_on", "--decode-on", "Numerics",
              "auto (gpu on CUDA when the build has nvJPEG), cpu (the loader's worker threads) or "
              "gpu: JPEGs decoded in batches by nvJPEG and cropped, resized, flipped and "
              "normalised on the GPU, for the transforms that allow it (torch, val; the others "
              "stay on the CPU, an error with gpu)"},
      n.decodeOn, numericsChoices().decodeOn);
    v(Setting{"",
              "--runtime",
              "Numerics",
              "libtorch, openvino (the model compiled by OpenVINO from fixres's ONNX graph, on the "
              "CPU; --precision fp32 or bf16) or auto (OpenVINO in fp32 where the build has it and "
              "the model runs on the CPU, else LibTorch): what runs the model",
              {},
              SettingRole::kInvocation,
              "eval,predict,extract,sweep,bench eval"},
      n.runtime, numericsChoices().runtime);
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
