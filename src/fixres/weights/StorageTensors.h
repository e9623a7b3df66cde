// The tensors of a torch.save pickle over storages fetched by key: the part the zip reader
// (TorchFile.h) and the legacy reader (LegacyTorchFile.h) share; only how a storage's bytes are
// fetched differs. Internal to the models layer.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "fixres/weights/StorageResolver.h"

namespace fixres::models {

// `message` starting with "<source>: " (unless it names the source first already).
std::string namedBy(const std::string& source, const std::string& message);

// storage.numel elements of storage.dtype in bytes. WeightsError naming `source` when that does
// not fit in int64.
int64_t storageBytes(const StorageRef& storage, const std::string& source);

// Adds `storage` to `declared` (by key). WeightsError naming `source` when its key was declared
// before with another dtype or size: a damaged file (torch.save names each storage with one type).
void declareStorage(std::unordered_map<std::string, StorageRef>& declared,
                    const StorageRef& storage, const std::string& source);

class StorageTensors final : public StorageResolver {
 public:
  // Returns the data of `storage` as a 1-d CPU tensor of storage.numel elements of
  // storage.dtype; WeightsError when the file holds less.
  using Fetch = std::function<at::Tensor(const StorageRef& storage)>;

  // `source` names the file in messages.
  StorageTensors(std::string source, Fetch fetch);

  // Starts reading a pickle: eager tensors (one CPU buffer per storage, views sharing it) or lazy
  // ones (meta tensors, filled by copyInto). Forgets the storages declared before; lazy tensors
  // of earlier reads stay valid.
  void begin(bool lazy);

  // declareStorage() into declared().
  void declare(const StorageRef& storage) override;
  at::Tensor tensor(const StorageRef& storage, int64_t offset, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides) override;

  // Copies lazy tensor `src` into `dst` (same shape; dtype converted by copy_): fetches the
  // storage (the last one fetched is kept, so views of one storage in a row fetch it once).
  void copyInto(const at::Tensor& src, at::Tensor& dst);

 private:
  at::Tensor fetchCached(const StorageRef& storage);

  struct LazySource {
    StorageRef storage;
    int64_t offset;
  };

  std::string source_;
  Fetch fetch_;
  bool lazy_ = true;
  std::unordered_map<std::string, StorageRef> declared_;
  std::unordered_map<std::string, at::Tensor> flat_;  // eager: storage key -> 1-d tensor
  std::unordered_map<const c10::TensorImpl*, LazySource> lazyTensors_;
  std::string cachedKey_;
  at::Tensor cached_;
};

}  // namespace fixres::models
