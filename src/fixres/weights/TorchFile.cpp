// torch.save archives: data.pkl through the Unpickler with tensors from the zip records (eager
// CPU tensors, or lazy meta tensors filled one record at a time: StorageTensors), and the
// Pickler's output written as a zip through an AtomicFile.
#include "fixres/weights/TorchFile.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <exception>
#include <utility>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/weights/Pickler.h"
#include "fixres/weights/StorageTensors.h"
#include "fixres/weights/Unpickler.h"
#include "fixres/weights/ZipArchive.h"

namespace fixres::models {

struct TorchArchive::Impl {
  explicit Impl(const std::string& path) : zip(path), storages(path, fetcher()) {}
  Impl(const void* data, size_t size, const std::string& name)
      : zip(data, size, name), storages(name, fetcher()) {}

  // The whole storage (record data/<key>), checked to hold its elements.
  StorageTensors::Fetch fetcher() {
    return [this](const StorageRef& st) {
      const std::string name = "data/" + st.key;
      auto [ptr, size] = zip.record(name, "tensor record " + name + " (file corrupt?)");
      const int64_t bytes = storageBytes(st, zip.name());
      FIXRES_CHECK(static_cast<uint64_t>(size) >= static_cast<uint64_t>(bytes), WeightsError,
                   zip.name(), ": record ", name, " has ", size, " bytes, expected ", bytes);
      auto data = std::make_shared<at::DataPtr>(std::move(ptr));
      return at::from_blob(
          data->get(), {st.numel}, [data](void*) {}, at::TensorOptions().dtype(st.dtype));
    };
  }

  ZipArchive zip;
  StorageTensors storages;
};

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
  impl_->storages.begin(lazy);
  Unpickler unpickler(static_cast<const char*>(pickle.get()), pickleSize, impl_->storages,
                      "data.pkl");
  c10::IValue value;
  try {
    value = unpickler.parse();
  } catch (const WeightsError& e) {
    FIXRES_FAIL(WeightsError, namedBy(path_, e.what()));
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
  impl_->storages.copyInto(src, dst);
}

c10::IValue readTorchFile(const std::string& path) {
  return openWeightSource(path)->read(/*lazy=*/false);
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
