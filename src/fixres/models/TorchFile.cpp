// torch.save archives: data.pkl through the Unpickler with tensors from the zip records (eager
// CPU tensors, or lazy meta tensors filled one record at a time), and the Pickler's output
// written as a zip through an AtomicFile.
#include "fixres/models/TorchFile.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <exception>
#include <unordered_map>
#include <utility>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/Pickler.h"
#include "fixres/models/StorageResolver.h"
#include "fixres/models/Unpickler.h"
#include "fixres/models/ZipArchive.h"

namespace fixres::models {

struct TorchArchive::Impl {
  explicit Impl(const std::string& path) : zip(path) {}
  Impl(const void* data, size_t size, const std::string& name) : zip(data, size, name) {}

  // The whole storage `key` (record data/<key>), checked to hold `numel` elements of `dtype`.
  std::pair<std::shared_ptr<at::DataPtr>, size_t> storage(const std::string& key, int64_t numel,
                                                          at::ScalarType dtype) {
    if (!cachedData || key != cachedKey) {
      cachedData.reset();
      std::string name = "data/" + key;
      auto [ptr, size] = zip.record(name, "tensor record " + name + " (file corrupt?)");
      cachedData = std::make_shared<at::DataPtr>(std::move(ptr));
      cachedSize = size;
      cachedKey = key;
    }
    int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
    FIXRES_CHECK(static_cast<int64_t>(cachedSize) >= bytes, WeightsError, zip.name(),
                 ": record data/", key, " has ", cachedSize, " bytes, expected ", bytes);
    return {cachedData, cachedSize};
  }

  ZipArchive zip;
  // Where the data of each lazy tensor of read(true) is.
  struct LazySource {
    std::string key;
    at::ScalarType dtype;
    int64_t storageNumel;
    int64_t offset;
  };
  std::unordered_map<const c10::TensorImpl*, LazySource> lazy;
  // The record read last (lazy loading reads each record once when tensors come in order).
  std::string cachedKey;
  std::shared_ptr<at::DataPtr> cachedData;
  size_t cachedSize = 0;
};

namespace {

// Tensors of data.pkl from the archive's records: eager CPU tensors (one per storage, views
// sharing it), or meta tensors registered in Impl::lazy for copyInto().
class ArchiveStorages final : public StorageResolver {
 public:
  ArchiveStorages(TorchArchive::Impl& impl, bool lazy) : impl_(impl), lazy_(lazy) {}

  at::Tensor tensor(const StorageRef& st, int64_t offset, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides) override {
    auto opts = at::TensorOptions().dtype(st.dtype);
    if (lazy_) {
      at::Tensor t = at::empty_strided(sizes, strides, opts.device(at::kMeta));
      impl_.lazy[t.unsafeGetTensorImpl()] =
          TorchArchive::Impl::LazySource{st.key, st.dtype, st.numel, offset};
      return t;
    }
    auto it = flat_.find(st.key);
    if (it == flat_.end()) {
      at::Tensor base;
      if (st.numel == 0) {
        base = at::empty({0}, opts);
      } else {
        auto data = impl_.storage(st.key, st.numel, st.dtype).first;
        base = at::from_blob(
            data->get(), {st.numel}, [data](void*) {}, opts);
        impl_.cachedData.reset();  // the tensor owns it now
      }
      it = flat_.emplace(st.key, base).first;
    }
    return it->second.as_strided(sizes, strides, offset);
  }

 private:
  TorchArchive::Impl& impl_;
  bool lazy_;
  std::unordered_map<std::string, at::Tensor> flat_;  // eager: storage key -> 1-d tensor
};

}  // namespace

TorchArchive::TorchArchive(const std::string& path)
    : path_(path), impl_(std::make_unique<Impl>(path)) {
  checkContents();
}

TorchArchive::TorchArchive(const void* data, size_t size, const std::string& name)
    : path_(name), impl_(std::make_unique<Impl>(data, size, name)) {
  checkContents();
}

TorchArchive::~TorchArchive() = default;

void TorchArchive::checkContents() {
  FIXRES_CHECK(impl_->zip.hasRecord("data.pkl"), WeightsError, path_,
               " is a zip archive without data.pkl: not a torch.save archive");
  if (impl_->zip.hasRecord("byteorder")) {
    auto [ptr, size] = impl_->zip.record("byteorder", "byteorder");
    std::string order(static_cast<const char*>(ptr.get()), size);
    FIXRES_CHECK(order == "little", WeightsError, path_, " was saved with byte order '", order,
                 "'; only little-endian files are supported");
  }
}

c10::IValue TorchArchive::read(bool lazy) {
  auto [pickle, pickleSize] = impl_->zip.record("data.pkl", "data.pkl");
  ArchiveStorages storages(*impl_, lazy);
  Unpickler unpickler(static_cast<const char*>(pickle.get()), pickleSize, storages, "data.pkl");
  c10::IValue value;
  try {
    value = unpickler.parse();
  } catch (const WeightsError& e) {
    FIXRES_FAIL(WeightsError, path_, ": ", e.what());
  }
  ignored_ = unpickler.ignoredObjects();
  if (!ignored_.empty()) {
    std::string names;
    for (const auto& n : ignored_) names += (names.empty() ? "" : ", ") + n;
    log::debug(path_, ": ignored Python objects of types ", names);
  }
  return value;
}

void TorchArchive::copyInto(const at::Tensor& src, at::Tensor& dst) {
  auto it = impl_->lazy.find(src.unsafeGetTensorImpl());
  FIXRES_CHECK(it != impl_->lazy.end(), InternalError, "copyInto: not a lazy tensor of ", path_);
  const auto& s = it->second;
  FIXRES_CHECK(src.sizes() == dst.sizes(), WeightsError, path_, ": shape ", src.sizes(),
               " does not match ", dst.sizes());
  if (src.numel() == 0) return;
  auto data = impl_->storage(s.key, s.storageNumel, s.dtype).first;
  at::Tensor view =
      at::from_blob(
          data->get(), {s.storageNumel}, [data](void*) {}, at::TensorOptions().dtype(s.dtype))
          .as_strided(src.sizes(), src.strides(), s.offset);
  at::NoGradGuard noGrad;
  dst.copy_(view);
}

c10::IValue readTorchFile(const std::string& path) {
  TorchArchive archive(path);
  return archive.read(/*lazy=*/false);
}

void writeTorchFile(const std::string& path, const c10::IValue& value) {
  Pickler pickler;
  pickler.dump(value);

  AtomicFile file(path);
  FIXRES_CHECK(file.ok(), OutputError, "cannot write ", path, ": ", file.reason());
  std::string failure;
  try {
    // The zip writer cannot unwind through its C code: AtomicFile keeps the first write error.
    ZipArchiveWriter writer([&file](const void* data, size_t n) -> size_t {
      file.write(data, n);
      return n;
    });
    writer.writeRecord("data.pkl", pickler.bytes().data(), pickler.bytes().size());
    writer.writeRecord("byteorder", "little", 6);
    for (const auto& s : pickler.storages()) {
      at::Tensor cpu = s.flat.device().is_cpu() ? s.flat : s.flat.cpu();
      writer.writeRecord("data/" + s.key, cpu.data_ptr(), cpu.nbytes());
      if (!file.ok()) break;
    }
    writer.finish();
  } catch (const c10::Error& e) {
    failure = oneLine(e.what());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty() && !file.commit()) failure = file.reason();
  FIXRES_CHECK(failure.empty(), OutputError, "cannot write ", path, ": ", failure,
               " (any previous file there is unchanged)");
}

}  // namespace fixres::models
