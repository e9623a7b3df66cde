// safetensors files (github.com/huggingface/safetensors), read lazily: an 8-byte little-endian
// u64 N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
// ..., "__metadata__": {str: str} (optional)}, then the byte buffer the offsets point into
// (little-endian, row-major).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <ATen/core/Dict.h>

#include "fixres/weights/WeightSource.h"

namespace fixres::models {

// Largest JSON header read (the safetensors library's own bound).
constexpr uint64_t kMaxSafetensorsHeader = 100000000;

class SafetensorsFile final : public WeightSource {
 public:
  // Opens the file and checks its header, as the safetensors library does: N within the file
  // and at most kMaxSafetensorsHeader, well-formed JSON object, every entry a known dtype
  // (BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64) with a shape of non-negative sizes whose
  // product fits, data_offsets [begin, end] with end - begin = elements x element size, the
  // tensors' bytes following each other from the start of the buffer to its end; __metadata__ a
  // map of strings. WeightsError naming the file and the problem otherwise. No tensor data is
  // read.
  explicit SafetensorsFile(const std::string& path);
  // The same over `size` bytes at `data` (not copied: they must outlive the object); `name`
  // stands for the path in messages.
  SafetensorsFile(const void* data, size_t size, const std::string& name);
  ~SafetensorsFile() override;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const override;
  // A dict str -> Tensor in the header's order (contiguous tensors; CPU or meta).
  c10::IValue read(bool lazy) override;
  // Reads only the bytes of `src`.
  void copyInto(const at::Tensor& src, at::Tensor& dst) override;
  // The header's __metadata__ (empty when absent).
  const std::map<std::string, std::string>& metadata() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The safetensors name of `dtype` ("F32", "I64", ...); WeightsError for a dtype the format lacks.
std::string safetensorsDtypeName(at::ScalarType dtype);

// Writes `tensors` (any device, any strides: copied to contiguous CPU little-endian bytes) as a
// safetensors file in the dict's order, with `metadata` as __metadata__ (omitted when empty); the
// header is padded with spaces to a multiple of 8 bytes, as the safetensors library writes it.
// Atomic (OutputError, exit 6, on a write failure; `path` untouched).
void writeSafetensorsFile(const std::string& path,
                          const c10::Dict<std::string, at::Tensor>& tensors,
                          const std::map<std::string, std::string>& metadata = {});

}  // namespace fixres::models
