// Pre-1.6 torch.save files (torch.save(obj, f, _use_new_zipfile_serialization=False), the only
// format before PyTorch 1.6), read lazily without Python. The file is one stream:
//   pickle(magic number 0x1950a86a20f9469cfc6c), pickle(protocol version 1001),
//   pickle(sys_info: {protocol_version, little_endian, type_sizes}),
//   pickle(the object saved; storages as persistent ids
//          ('storage', torch.<Dtype>Storage, key, location, numel, view metadata or None)),
//   pickle([storage keys]),
//   then for each key in that order: its element count (u64 little-endian) and its elements.
// (torch/serialization.py, _legacy_save and _legacy_load.) The older tar format (PyTorch 0.1)
// is not read.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fixres/weights/WeightSource.h"

namespace fixres::models {

class LegacyTorchFile final : public WeightSource {
 public:
  // Opens the file and checks its structure: the magic number, the protocol version, a
  // little-endian sys_info, the pickles, and the storage section (each storage's count and size
  // against its pickle, within the file), indexing where each storage's data is; nothing of the
  // data is read. WeightsError naming the file for anything wrong (missing, empty, truncated,
  // unknown magic number, big-endian, damaged pickle, storage count mismatch).
  explicit LegacyTorchFile(const std::string& path);
  // The same over `size` bytes at `data` (not copied: they must outlive the object); `name`
  // stands for the path in messages.
  LegacyTorchFile(const void* data, size_t size, const std::string& name);
  ~LegacyTorchFile() override;
  LegacyTorchFile(const LegacyTorchFile&) = delete;
  LegacyTorchFile& operator=(const LegacyTorchFile&) = delete;

  const std::string& path() const override;
  // As TorchArchive::read: the saved object as IValues; eager CPU tensors or lazy meta tensors.
  c10::IValue read(bool lazy) override;
  // Reads only the storage holding `src` (the file stays open).
  void copyInto(const at::Tensor& src, at::Tensor& dst) override;
  // Python type names of objects read() could not represent (mapped to None).
  const std::vector<std::string>& ignoredObjects() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fixres::models
