// Eager and lazy tensors over fetched storages.
#include "fixres/weights/StorageTensors.h"

#include <ATen/ATen.h>

#include <limits>
#include <utility>

#include "fixres/common/Error.h"

namespace fixres::models {

std::string namedBy(const std::string& source, const std::string& message) {
  return message.rfind(source, 0) == 0 ? message : source + ": " + message;
}

int64_t storageBytes(const StorageRef& storage, const std::string& source) {
  const auto itemSize = static_cast<int64_t>(c10::elementSize(storage.dtype));
  FIXRES_CHECK(storage.numel <= std::numeric_limits<int64_t>::max() / itemSize, WeightsError,
               source, ": storage ", storage.key, " of ", storage.numel,
               " elements is larger than any file");
  return storage.numel * itemSize;
}

StorageTensors::StorageTensors(std::string source, Fetch fetch)
    : source_(std::move(source)), fetch_(std::move(fetch)) {}

void StorageTensors::begin(bool lazy) {
  lazy_ = lazy;
  declared_.clear();
  flat_.clear();
}

void declareStorage(std::unordered_map<std::string, StorageRef>& declared,
                    const StorageRef& storage, const std::string& source) {
  auto [it, inserted] = declared.emplace(storage.key, storage);
  if (inserted) return;
  const StorageRef& first = it->second;
  FIXRES_CHECK(first.dtype == storage.dtype && first.numel == storage.numel, WeightsError, source,
               ": storage ", storage.key, " is named as ", first.numel, " x ", first.dtype,
               " and as ", storage.numel, " x ", storage.dtype, " (file damaged?)");
}

void StorageTensors::declare(const StorageRef& storage) {
  declareStorage(declared_, storage, source_);
}

at::Tensor StorageTensors::fetchCached(const StorageRef& storage) {
  if (!cached_.defined() || cachedKey_ != storage.key) {
    cached_ = at::Tensor();
    at::Tensor flat = fetch_(storage);
    FIXRES_CHECK(
        flat.dim() == 1 && flat.numel() == storage.numel && flat.scalar_type() == storage.dtype,
        InternalError, source_, ": storage ", storage.key, " fetched with wrong shape");
    cached_ = flat;
    cachedKey_ = storage.key;
  }
  return cached_;
}

at::Tensor StorageTensors::tensor(const StorageRef& storage, int64_t offset, c10::IntArrayRef sizes,
                                  c10::IntArrayRef strides) {
  auto opts = at::TensorOptions().dtype(storage.dtype);
  if (lazy_) {
    at::Tensor t = at::empty_strided(sizes, strides, opts.device(at::kMeta));
    lazyTensors_[t.unsafeGetTensorImpl()] = LazySource{storage, offset};
    return t;
  }
  auto it = flat_.find(storage.key);
  if (it == flat_.end()) {
    at::Tensor base = storage.numel == 0 ? at::empty({0}, opts) : fetchCached(storage);
    cached_ = at::Tensor();  // the tensors read own it now
    it = flat_.emplace(storage.key, base).first;
  }
  return it->second.as_strided(sizes, strides, offset);
}

void StorageTensors::copyInto(const at::Tensor& src, at::Tensor& dst) {
  auto it = lazyTensors_.find(src.unsafeGetTensorImpl());
  FIXRES_CHECK(it != lazyTensors_.end(), InternalError, "copyInto: not a lazy tensor of ", source_);
  FIXRES_CHECK(src.sizes() == dst.sizes(), WeightsError, source_, ": shape ", src.sizes(),
               " does not match ", dst.sizes());
  if (src.numel() == 0) return;
  const LazySource& s = it->second;
  at::Tensor view = fetchCached(s.storage).as_strided(src.sizes(), src.strides(), s.offset);
  at::NoGradGuard noGrad;
  dst.copy_(view);
}

}  // namespace fixres::models
