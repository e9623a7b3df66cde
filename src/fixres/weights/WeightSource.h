// A weight file opened for reading, whatever its format: torch.save zip archives (TorchFile.h),
// legacy pre-1.6 torch.save streams (LegacyTorchFile.h) and safetensors files
// (SafetensorsFile.h) all give their contents as IValues with lazy tensors filled on demand,
// so state-dict loading (WeightIO.h) has one path for every format.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <memory>
#include <string>

namespace fixres::models {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  // The path (or name, for bytes in memory) given at opening, for messages.
  virtual const std::string& path() const = 0;

  // The file's contents as IValues (a torch.save file: whatever was saved; a safetensors file: a
  // dict str -> Tensor in file order). Eager (lazy = false): tensors are CPU tensors holding the
  // file's data. Lazy: tensors are meta tensors (shape, strides, dtype only) whose data
  // copyInto() reads on demand, so a state dict loads one tensor at a time. WeightsError naming
  // the file when it is damaged.
  virtual c10::IValue read(bool lazy) = 0;

  // Copies the data of lazy tensor `src` (from read(true) of this source) into `dst` (same
  // shape; any device; dtype converted by copy_), reading only the bytes `src` needs.
  virtual void copyInto(const at::Tensor& src, at::Tensor& dst) = 0;
};

enum class WeightFormat {
  kTorchZip,     // torch.save, PyTorch >= 1.6: a zip archive ("PK\x03\x04")
  kTorchLegacy,  // torch.save(..., _use_new_zipfile_serialization=False): pickles (0x80)
  kSafetensors,  // u64 header length, then a JSON object ('{' at byte 8)
  kUnknown,
};

// The format the first bytes of a file announce (`head`: its first min(size, 16) bytes). Only the
// container is told apart here; each reader checks the rest (a pickle without torch.save's magic
// number is refused by the legacy reader, which names the problem).
WeightFormat detectWeightFormat(const std::string& head);

// Opens a weight file of any of the formats above. WeightsError naming the file when it is
// missing, unreadable, not a regular file, empty, of none of these formats, or damaged in its
// structure (each reader checks its container when opened).
std::unique_ptr<WeightSource> openWeightSource(const std::string& path);
// The same over `size` bytes at `data` (not copied: they must outlive the source); `name` stands
// for the path in messages.
std::unique_ptr<WeightSource> openWeightSource(const void* data, size_t size,
                                               const std::string& name);

}  // namespace fixres::models
