// The format dispatch of DecodeFormats.h: sniffing the first bytes and handing the file to its
// reader (BmpReader, WebpReader, TiffReader, PnmReader), or naming the library this build lacks.
#include "fixres/image/DecodeFormats.h"

#include <cstring>

#include "fixres/image/BmpReader.h"
#include "fixres/image/PnmReader.h"
#include "fixres/image/TiffReader.h"
#include "fixres/image/WebpReader.h"

namespace fixres::image::formats {
namespace {

bool startsWith(const uint8_t* d, size_t n, const char* prefix, size_t length) {
  return n >= length && std::memcmp(d, prefix, length) == 0;
}

// A format whose library was absent when this fixres was built (cmake -DFIXRES_OPTIONAL_DEPS=ON).
[[maybe_unused]] std::string notBuilt(Kind kind) {
  const char* what = kind == Kind::kBmp    ? "BMP images (built without stb_image)"
                     : kind == Kind::kWebp ? "WebP images (built without libwebp)"
                                           : "TIFF images (built without libtiff)";
  return std::string("this build of fixres reads no ") + what;
}

}  // namespace

std::string builtFormats() {
  std::string s = "jpeg png";
#if FIXRES_WITH_BMP
  s += " bmp";
#endif
#if FIXRES_WITH_WEBP
  s += " webp";
#endif
#if FIXRES_WITH_TIFF
  s += " tiff";
#endif
  return s + " pnm";
}

Kind sniff(const uint8_t* d, size_t n) {
  if (startsWith(d, n, "BM", 2)) return Kind::kBmp;
  if (n >= 12 && startsWith(d, n, "RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) {
    return Kind::kWebp;
  }
  if (startsWith(d, n, "II*\0", 4) || startsWith(d, n, "MM\0*", 4) ||
      startsWith(d, n, "II+\0", 4) || startsWith(d, n, "MM\0+", 4)) {
    return Kind::kTiff;
  }
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && pnmSpace(d[2])) return Kind::kPnm;
  return Kind::kNone;
}

std::string readSize(Kind kind, const uint8_t* d, size_t n, int* width, int* height) {
  switch (kind) {
    case Kind::kBmp:
#if FIXRES_WITH_BMP
      return bmpSize(d, n, width, height);
#else
      return notBuilt(kind);
#endif
    case Kind::kWebp:
#if FIXRES_WITH_WEBP
      return webpSize(d, n, width, height);
#else
      return notBuilt(kind);
#endif
    case Kind::kTiff:
#if FIXRES_WITH_TIFF
      return tiffSize(d, n, width, height);
#else
      return notBuilt(kind);
#endif
    case Kind::kPnm:
      return pnmSize(d, n, width, height);
    case Kind::kNone:
      break;
  }
  return "not an image file";
}

std::string decodeRgb(Kind kind, const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  switch (kind) {
    case Kind::kBmp:
#if FIXRES_WITH_BMP
      return bmpDecode(d, n, width, height, out);
#else
      return notBuilt(kind);
#endif
    case Kind::kWebp:
#if FIXRES_WITH_WEBP
      return webpDecode(d, n, width, height, out);
#else
      return notBuilt(kind);
#endif
    case Kind::kTiff:
#if FIXRES_WITH_TIFF
      return tiffDecode(d, n, width, height, out);
#else
      return notBuilt(kind);
#endif
    case Kind::kPnm:
      return pnmDecode(d, n, width, height, out);
    case Kind::kNone:
      break;
  }
  return "not an image file";
}

}  // namespace fixres::image::formats
