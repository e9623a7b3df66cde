// .npy decoding of arbitrary bytes: a tensor or a DataError.
#include <cstddef>
#include <cstdint>

#include "fixres/common/Error.h"
#include "fixres/data/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto t = fixres::data::decodeNpy(reinterpret_cast<const char*>(data), size, "fuzz.npy");
    volatile double s = t.numel() > 0 ? t.to(torch::kDouble).sum().item<double>() : 0.0;
    (void)s;
  } catch (const fixres::Error&) {
  }
  return 0;
}
