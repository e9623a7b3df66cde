// Weight-file reading from arbitrary bytes: a value or a WeightsError. Inputs in a weight format
// (a zip "PK\x03\x04", a legacy torch.save stream: a pickle opening with PROTO and LONG1, the
// magic number's, or a safetensors header: '{' at byte 8) go through openWeightSource in memory,
// read eagerly, then lazily with every tensor of a top-level dict copied out (copyInto); all
// others straight to the Unpickler, with tensors as shape-only meta tensors, so the pickle
// interpreter sees every input.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/weights/StorageResolver.h"
#include "fixres/weights/Unpickler.h"
#include "fixres/weights/WeightSource.h"

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

// Tensors copied out by the lazy path: at most this many elements each (a view may repeat one
// stored element many times).
constexpr int64_t kMaxCopied = int64_t{1} << 20;

void readWeights(const uint8_t* data, size_t size) {
  auto source = fixres::models::openWeightSource(data, size, "fuzz.pth");
  c10::IValue eager = source->read(/*lazy=*/false);
  (void)eager;
  c10::IValue lazy = source->read(/*lazy=*/true);
  if (!lazy.isGenericDict()) return;
  for (const auto& e : lazy.toGenericDict()) {
    if (!e.value().isTensor()) continue;
    const at::Tensor& src = e.value().toTensor();
    if (src.numel() > kMaxCopied) continue;
    at::Tensor dst = at::empty(src.sizes(), at::TensorOptions().dtype(src.scalar_type()));
    source->copyInto(src, dst);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using fixres::models::WeightFormat;
  const std::string head(reinterpret_cast<const char*>(data), size < 16 ? size : 16);
  const WeightFormat format = fixres::models::detectWeightFormat(head);
  const bool legacy = format == WeightFormat::kTorchLegacy && size > 2 && data[2] == 0x8a;
  try {
    if (format == WeightFormat::kTorchZip || format == WeightFormat::kSafetensors || legacy) {
      readWeights(data, size);
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
