// BMP decoding (BmpReader.h): stb_image, with Pillow's 16-bit unpackers and truncation check;
// run-length encoded files by BmpRle.h.
#include "fixres/image/BmpReader.h"

#include <cstring>

#include "fixres/image/BmpRle.h"
#include "fixres/image/Codec.h"

#if FIXRES_WITH_BMP
// stb_image's BMP decoder alone, compiled into this file with internal linkage (the file is kept
// out of the unity build so that these macros stay here).
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image.h>
#pragma GCC diagnostic pop

#include <cstdlib>
#include <cstring>
#include <memory>

namespace fixres::image::formats {
namespace {

inline uint32_t le16(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8;
}
inline uint32_t le32(const uint8_t* p) {
  return le16(p) | le16(p + 2) << 16;
}

// stb_image fills the rows missing from a truncated uncompressed BMP with zeros; Pillow reports
// the truncation. The pixel array must hold every row.
std::string bmpCheckLength(const uint8_t* d, size_t n) {
  if (n < 30) return "image file is truncated (in the BMP header)";
  const uint32_t offset = le32(d + 10), headerSize = le32(d + 14);
  uint64_t width = 0, height = 0, bits = 0, compression = 0;
  if (headerSize == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(d + 18), height = le16(d + 20), bits = le16(d + 24);
  } else {
    if (n < 34) return "image file is truncated (in the BMP header)";
    width = le32(d + 18), bits = le16(d + 28), compression = le32(d + 30);
    const int32_t h = int32_t(le32(d + 22));
    height = h < 0 ? uint64_t(-int64_t(h)) : uint64_t(h);
  }
  // BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS: rows of whole 32-bit words.
  if (compression != 0 && compression != 3 && compression != 6) return {};
  const uint64_t need = offset + (width * bits + 31) / 32 * 4 * height;
  if (n < need) return "image file is truncated";
  return {};
}

// 16-bit BMPs: Pillow's BGR;15 (no bit fields, or 5-5-5 ones) and BGR;16 (5-6-5) unpackers scale
// each field by v * 255 / max, rounding down; stb_image replicates bits. Other masks: stb_image.
bool bmp16(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  if (n < 54 || le32(d + 14) < 40 || le16(d + 28) != 16) return false;
  const uint32_t compression = le32(d + 30);
  uint32_t masks[3] = {0x7C00, 0x03E0, 0x001F};
  if (compression == 3) {
    if (n < 66) return false;
    for (int k = 0; k < 3; ++k) masks[k] = le32(d + 54 + 4 * k);
  } else if (compression != 0) {
    return false;
  }
  const bool r555 = masks[0] == 0x7C00 && masks[1] == 0x03E0 && masks[2] == 0x001F;
  const bool r565 = masks[0] == 0xF800 && masks[1] == 0x07E0 && masks[2] == 0x001F;
  if (!r555 && !r565) return false;
  const bool topDown = int32_t(le32(d + 22)) < 0;
  const size_t stride = (size_t(width) * 16 + 31) / 32 * 4;
  const uint8_t* pixels = d + le32(d + 10);
  const unsigned greenMax = r565 ? 63 : 31, greenShift = 5, redShift = r565 ? 11 : 10;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = pixels + stride * size_t(topDown ? y : height - 1 - y);
    uint8_t* o = out + size_t(y) * width * 3;
    for (int x = 0; x < width; ++x, o += 3) {
      const unsigned v = le16(row + 2 * x);
      o[0] = uint8_t(((v >> redShift) & 31) * 255 / 31);
      o[1] = uint8_t(((v >> greenShift) & greenMax) * 255 / greenMax);
      o[2] = uint8_t((v & 31) * 255 / 31);
    }
  }
  return true;
}

}  // namespace

std::string bmpSize(const uint8_t* d, size_t n, int* w, int* h) {
  if (isRleBmp(d, n)) return rleBmpSize(d, n, w, h);  // stb_image has no RLE decoder
  int comp = 0;
  if (n > size_t(INT32_MAX) || !stbi_info_from_memory(d, int(n), w, h, &comp)) {
    return std::string("cannot read the BMP header (") + stbi_failure_reason() + ")";
  }
  *h = std::abs(*h);  // stb_image gives a top-down file's height as stored: negative
  return {};
}

std::string bmpDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  if (isRleBmp(d, n)) return rleBmpDecode(d, n, width, height, out);
  if (std::string error = bmpCheckLength(d, n); !error.empty()) return error;
  if (bmp16(d, n, width, height, out)) return {};
  int w = 0, h = 0, comp = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(d, int(n), &w, &h, &comp, 3), stbi_image_free);
  if (!pixels) return std::string("cannot decode the BMP image (") + stbi_failure_reason() + ")";
  if (w != width || h != height) return "the BMP image size changed while decoding";
  std::memcpy(out, pixels.get(), size_t(width) * height * 3);
  return {};
}

}  // namespace fixres::image::formats

#endif  // FIXRES_WITH_BMP

namespace fixres::image {
namespace {

bool bmpSniff(const uint8_t* d, size_t n) {
  return n >= 2 && d[0] == 'B' && d[1] == 'M';
}

}  // namespace

const Codec& bmpCodec() {
#if FIXRES_WITH_BMP
  static const Codec kCodec{"bmp",    "BMP", {"bmp"},          /*imageFolder=*/true,
                            bmpSniff, "",    formats::bmpSize, formats::bmpDecode};
#else
  static const Codec kCodec{
      "bmp",   "BMP",  {"bmp"}, /*imageFolder=*/true, bmpSniff, "built without stb_image",
      nullptr, nullptr};
#endif
  return kCodec;
}

}  // namespace fixres::image
