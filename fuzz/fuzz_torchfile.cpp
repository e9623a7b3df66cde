// torch.save reading from arbitrary bytes: a value or a WeightsError. Inputs starting with "PK"
// go through the zip archive (in memory) and data.pkl; all others straight to the Unpickler,
// with tensors as shape-only meta tensors, so the pickle interpreter sees every input.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>

#include "fixres/common/Error.h"
#include "fixres/models/StorageResolver.h"
#include "fixres/models/TorchFile.h"
#include "fixres/models/Unpickler.h"

namespace {

// Storages without data: allocates nothing however large the pickle says they are.
class MetaStorages final : public fixres::models::StorageResolver {
 public:
  at::Tensor tensor(const fixres::models::StorageRef& storage, int64_t offset,
                    c10::IntArrayRef sizes, c10::IntArrayRef strides) override {
    return at::empty_strided(sizes, strides,
                             at::TensorOptions().dtype(storage.dtype).device(at::kMeta));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
      fixres::models::TorchArchive archive(data, size, "fuzz.pth");
      auto value = archive.read(/*lazy=*/false);
      (void)value;
    } else {
      MetaStorages storages;
      fixres::models::Unpickler unpickler(reinterpret_cast<const char*>(data), size, storages);
      auto value = unpickler.parse();
      (void)value;
    }
  } catch (const fixres::Error&) {
  }
  return 0;
}
