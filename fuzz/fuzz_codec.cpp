// One image codec (FIXRES_FUZZ_CODEC: "bmp", "webp", "tiff", "pnm") on arbitrary bytes, through
// the path every command reads images by (decodeImage: sniffing, the header's size, the declared
// size checks, the decode): an 8-bit RGB image of the size it states, or a DataError, nothing
// else. Inputs another codec sniffs are rejected (-1: kept out of the corpus), so the campaign
// stays inside the codec's own reader.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fixres/common/Error.h"
#include "fixres/image/Codec.h"
#include "fixres/image/Decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fixres::image::Codec* codec = fixres::image::sniffCodec(data, size);
  if (codec == nullptr || codec->name != FIXRES_FUZZ_CODEC) return -1;
  fixres::image::DecodeOptions o;
  o.maxPixels = 1 << 22;  // keep single inputs small; the limit itself is part of what is tested
  try {
    auto img = fixres::image::decodeImage(data, size, "fuzz", o);
    if (img.pixels.size() != size_t(img.width) * img.height * 3) std::abort();
    // Touch every pixel so a short buffer would be caught by AddressSanitizer.
    volatile uint32_t sum = 0;
    for (size_t i = 0; i < img.pixels.size(); ++i) sum += img.pixels[i];
  } catch (const fixres::DataError&) {
  }
  return 0;
}
