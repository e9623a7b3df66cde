// JPEG / PNG decoding of arbitrary bytes: either an image or a DataError, nothing else.
#include <cstddef>
#include <cstdint>

#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fixres::image::DecodeOptions o;
  o.maxPixels = 1 << 22;  // keep single inputs small; the limit itself is part of what is tested
  try {
    auto img = fixres::image::decodeImage(data, size, "fuzz", o);
    // Touch every pixel so a short buffer would be caught by AddressSanitizer.
    volatile uint32_t sum = 0;
    for (size_t i = 0; i < img.pixels.size(); ++i) sum += img.pixels[i];
  } catch (const fixres::DataError&) {
  }
  return 0;
}
