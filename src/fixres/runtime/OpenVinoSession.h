// OpenVINO, fixres's second inference runtime (--runtime openvino, docs/runtimes.md): a model
// given as ONNX bytes (fixres's own export, OnnxExport.h) compiled for the CPU at a precision, run
// on CPU tensors. The only place OpenVINO is named: its implementation is built where CMake finds
// the OpenVINO SDK (the openvino wheel of the project's environment), a refusal otherwise.
#pragma once

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fixres/runtime/Precision.h"

namespace fixres::engine {

// An ONNX model handed to OpenVINO: its bytes, or (`path` set) a model.onnx file whose tensors
// lie in ONNX's external data beside it, for a model over protobuf's 2 GiB (OnnxExport.h).
struct OnnxSource {
  std::string bytes;
  std::string path;
  std::string scratch;  // with `path`: the folder holding it, the caller's to remove once read
};

// True in a build with OpenVINO; its version ("2026.4.0"), "" without.
bool openVinoBuiltIn();
// UsageError "<what>: this build has no OpenVINO runtime (...)" in a build without it.
void requireOpenVino(const std::string& what);
std::string openVinoVersion();

// Whether this CPU runs OpenVINO at `precision` (fp32 always; bf16 where the CPU plugin lists
// BF16). False in a build without OpenVINO.
bool openVinoSupports(Precision precision);

class OpenVinoSession {
 public:
  virtual ~OpenVinoSession() = default;
  // The model's outputs, in its order, for x (N x 3 x H x W, float32, on the CPU; made contiguous
  // here): float32 tensors of their own.
  virtual std::vector<torch::Tensor> run(const torch::Tensor& x) = 0;
};

// Reads `onnx` and compiles it for the CPU with `threads` inference threads and `precision`
// as OpenVINO's inference precision hint (fp32 is asked for explicitly: OpenVINO's own default is
// bf16 on CPUs that have it). The precision is one resolveNumerics (Numerics.h) accepted: fp32,
// or bf16 where openVinoSupports it. UsageError in a build without OpenVINO; WeightsError naming
// `what` when OpenVINO cannot read or compile the model.
std::unique_ptr<OpenVinoSession> compileOpenVino(const OnnxSource& onnx, Precision precision,
                                                 int threads, const std::string& what);

// Converts `onnx` to OpenVINO's IR, `xmlPath` and the .bin beside it (the weights in fp32),
// with `info` in the model's runtime info (under "fixres"). UsageError in a build without
// OpenVINO; OutputError naming the file that cannot be written.
void writeOpenVinoIr(const OnnxSource& onnx, const std::string& xmlPath,
                     const std::map<std::string, std::string>& info);

}  // namespace fixres::engine
