// How the Unpickler gets tensor data: the storages a pickle names by persistent id are handed to
// a StorageResolver, so each container format (the torch.save zip archive, or the pre-1.6
// stream of raw storages) supplies its own.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <string>

namespace fixres::models {

// A tensor storage as a torch.save pickle names it: the persistent id
// ('storage', torch.<Dtype>Storage, key, location, numel) (pre-1.6 files add a sixth item, the
// view metadata: a view is given to the resolver as its root storage and an offset in it).
struct StorageRef {
  std::string key;  // record name within the file ("0", "1", ...; data/<key> in a zip)
  at::ScalarType dtype = at::kFloat;  // element type (kByte for UntypedStorage)
  int64_t numel = 0;                  // elements (bytes for UntypedStorage), >= 0
  std::string location;  // device it was saved from ("cpu", "cuda:0"); informative only
};

// Builds the tensors of a pickle. Implementations may keep state across calls (storages shared
// by several tensors must give tensors sharing their data).
class StorageResolver {
 public:
  virtual ~StorageResolver() = default;
  // Called for each storage persistent id as it is read, whether or not a tensor uses it (a
  // pre-1.6 file stores the data of every storage named). WeightsError to refuse it.
  virtual void declare(const StorageRef& storage) {}
  // A tensor viewing `storage` at (offset, sizes, strides), in elements, dtype storage.dtype.
  // The view is checked to lie inside storage.numel elements before the call. It may be a meta
  // tensor (shape only) whose data the implementation supplies later. Throws WeightsError when
  // the data cannot be had.
  virtual at::Tensor tensor(const StorageRef& storage, int64_t offset, c10::IntArrayRef sizes,
                            c10::IntArrayRef strides) = 0;
};

}  // namespace fixres::models
