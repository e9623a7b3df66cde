// TIFF decoding (TiffReader.h): libtiff over an in-memory stream, samples unpacked as Pillow's
// TiffImagePlugin does.
#include "fixres/image/TiffReader.h"

#include <cstring>

#include "fixres/image/Codec.h"

#if FIXRES_WITH_TIFF
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

namespace fixres::image::formats {
namespace {

struct MemoryStream {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  std::string error;  // libtiff's first error message
};

tmsize_t tiffRead(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<MemoryStream*>(h);
  if (n <= 0 || s->pos >= s->size) return 0;
  const size_t count = std::min(size_t(n), s->size - s->pos);
  std::memcpy(buf, s->data + s->pos, count);
  s->pos += count;
  return tmsize_t(count);
}
tmsize_t tiffWrite(thandle_t, void*, tmsize_t) {
  return -1;
}
toff_t tiffSeek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<MemoryStream*>(h);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = s->pos;
  if (whence == SEEK_END) base = s->size;
  const uint64_t target = base + off;  // toff_t is unsigned: a negative offset wraps, checked below
  if (target > s->size) return static_cast<toff_t>(-1);
  s->pos = size_t(target);
  return target;
}
int tiffClose(thandle_t) {
  return 0;
}
toff_t tiffSize(thandle_t h) {
  return static_cast<MemoryStream*>(h)->size;
}
int tiffMap(thandle_t, void**, toff_t*) {
  return 0;
}
void tiffUnmap(thandle_t, void*, toff_t) {}

int tiffError(TIFF*, void* user, const char*, const char* fmt, va_list ap) {
  auto* s = static_cast<MemoryStream*>(user);
  if (s->error.empty()) {
    char message[256];
    std::vsnprintf(message, sizeof(message), fmt, ap);
    s->error = message;
  }
  return 1;  // handled: nothing reaches libtiff's global handler (stderr)
}
int tiffWarning(TIFF*, void*, const char*, const char*, va_list) {
  return 1;  // Pillow does not report libtiff's warnings either
}

struct Tiff {
  MemoryStream stream;
  TIFF* tif = nullptr;
  Tiff(const uint8_t* d, size_t n) : stream{d, n, 0, {}} {
    TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetErrorHandlerExtR(options, tiffError, &stream);
    TIFFOpenOptionsSetWarningHandlerExtR(options, tiffWarning, &stream);
    // "m": no memory mapping (the bytes are already in memory, read through tiffRead).
    tif = TIFFClientOpenExt("image", "rm", &stream, tiffRead, tiffWrite, tiffSeek, tiffClose,
                            tiffSize, tiffMap, tiffUnmap, options);
    TIFFOpenOptionsFree(options);
  }
  ~Tiff() {
    if (tif) TIFFClose(tif);
  }
  std::string failure(const char* what) const {
    return std::string(what) + (stream.error.empty() ? "" : " (" + stream.error + ")");
  }
};

// Working memory a TIFF may declare beyond 8 times its RGB size (tiles larger than a small image).
constexpr uint64_t kTiffSlackBytes = uint64_t(64) << 20;

// The samples of every row, contiguous (chunky) layout, from strips or tiles.
std::string tiffReadRows(Tiff& t, int width, int height, std::vector<uint8_t>& rows,
                         size_t* rowBytes) {
  TIFF* tif = t.tif;
  const tmsize_t scanline = TIFFScanlineSize(tif);
  if (scanline <= 0) return t.failure("cannot size the TIFF rows");
  *rowBytes = size_t(scanline);
  rows.assign(*rowBytes * size_t(height), 0);
  if (!TIFFIsTiled(tif)) {
    for (int y = 0; y < height; ++y) {
      if (TIFFReadScanline(tif, rows.data() + *rowBytes * y, uint32_t(y), 0) < 0) {
        return t.failure("cannot decode the TIFF image (corrupt or truncated)");
      }
    }
    return {};
  }
  uint32_t tileWidth = 0, tileLength = 0;
  TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tileWidth);
  TIFFGetField(tif, TIFFTAG_TILELENGTH, &tileLength);
  const tmsize_t tileRow = TIFFTileRowSize(tif);
  const tmsize_t tileSize = TIFFTileSize(tif);
  if (tileWidth == 0 || tileLength == 0 || tileRow <= 0 || tileSize <= 0) {
    return t.failure("cannot size the TIFF tiles");
  }
  // Bytes per pixel column: the row size over the width (contiguous samples of >= 8 bits).
  const size_t pixelBytes = *rowBytes / size_t(width);
  std::vector<uint8_t> tile(static_cast<size_t>(tileSize));
  for (uint32_t ty = 0; ty < uint32_t(height); ty += tileLength) {
    for (uint32_t tx = 0; tx < uint32_t(width); tx += tileWidth) {
      if (TIFFReadTile(tif, tile.data(), tx, ty, 0, 0) < 0) {
        return t.failure("cannot decode the TIFF image (corrupt or truncated)");
      }
      const uint32_t copyRows = std::min(tileLength, uint32_t(height) - ty);
      const size_t copyBytes = size_t(std::min(tileWidth, uint32_t(width) - tx)) * pixelBytes;
      for (uint32_t r = 0; r < copyRows; ++r) {
        std::memcpy(rows.data() + *rowBytes * (ty + r) + tx * pixelBytes,
                    tile.data() + size_t(tileRow) * r, copyBytes);
      }
    }
  }
  return {};
}

// "" when the samples `tif` declares (rows, or one tile, of `spp` samples per pixel), read into
// memory before they become RGB, take at most 8 times the RGB image (plus kTiffSlackBytes): so
// the pixel limit bounds them too (a 1 KB file declaring 32768x32768 tiles, or a 1000x1000 image
// of 1000 samples per pixel, would take gigabytes); else why not.
std::string declaredTooLarge(TIFF* tif, int width, int height, unsigned spp) {
  const uint64_t rgbBytes = uint64_t(width) * uint64_t(height) * 3;
  const uint64_t tile = TIFFIsTiled(tif) ? TIFFTileSize64(tif) : 0;
  const uint64_t declared = TIFFScanlineSize64(tif) * uint64_t(height) + tile;
  if (declared <= 8 * rgbBytes + kTiffSlackBytes) return {};
  return "the TIFF declares " + std::to_string(declared) + " bytes of samples for a " +
         std::to_string(width) + "x" + std::to_string(height) + " image (" + std::to_string(spp) +
         " samples per pixel" + (tile > 0 ? ", tiles of " + std::to_string(tile) + " bytes" : "") +
         "): more than 8 times its RGB size";
}

// Sample `x` of a row of `bits`-bit samples (1, 2, 4, 8; MSB first, as libtiff hands them out).
inline unsigned sampleAt(const uint8_t* row, size_t x, int bits) {
  if (bits == 8) return row[x];
  const size_t bit = x * size_t(bits);
  return (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
}

}  // namespace

std::string tiffSize(const uint8_t* d, size_t n, int* w, int* h) {
  Tiff t(d, n);
  if (!t.tif) return t.failure("cannot read the TIFF header");
  uint32_t width = 0, height = 0;
  if (!TIFFGetField(t.tif, TIFFTAG_IMAGEWIDTH, &width) ||
      !TIFFGetField(t.tif, TIFFTAG_IMAGELENGTH, &height) || width > INT32_MAX ||
      height > INT32_MAX) {
    return "the TIFF file has no valid image size";
  }
  *w = int(width);
  *h = int(height);
  return {};
}

// Whether the first directory, as written, declares a palette image (Photometric 3) without a
// ColorMap (tag 320). libtiff then reads the samples as gray levels; Pillow, which reads the tags
// itself, refuses the file, and so does fixres. Classic and BigTIFF, either byte order.
bool paletteWithoutColorMap(const uint8_t* d, size_t n) {
  if (n < 16 || !((d[0] == 'I' && d[1] == 'I') || (d[0] == 'M' && d[1] == 'M'))) return false;
  const bool little = d[0] == 'I';
  auto un = [&](size_t at, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) v |= uint64_t(d[at + (little ? k : bytes - 1 - k)]) << (8 * k);
    return v;
  };
  const bool big = un(2, 2) == 43;
  // The directory's offset, its entry count and entry sizes.
  const int offsetBytes = big ? 8 : 4, countBytes = big ? 8 : 2, entryBytes = big ? 20 : 12;
  const uint64_t ifd = un(big ? 8 : 4, offsetBytes);
  if (ifd > n || n - ifd < uint64_t(countBytes)) return false;
  const uint64_t count = un(size_t(ifd), countBytes);
  bool palette = false, colorMap = false;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = ifd + countBytes + i * entryBytes;
    if (at > n || n - at < uint64_t(entryBytes)) break;
    const uint64_t tag = un(size_t(at), 2), type = un(size_t(at) + 2, 2);
    // tag, type, count (4 or 8 bytes), then the value, left-justified in its field
    const size_t value = size_t(at) + (big ? 12 : 8);
    if (tag == 262) palette = un(value, type == 4 ? 4 : 2) == 3;
    if (tag == 320) colorMap = true;
  }
  return palette && !colorMap;
}

std::string tiffDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  if (paletteWithoutColorMap(d, n)) return "the palette TIFF image has no colour map";
  Tiff t(d, n);
  if (!t.tif) return t.failure("cannot read the TIFF header");
  TIFF* tif = t.tif;
  uint16_t bits = 1, spp = 1, photometric = PHOTOMETRIC_MINISBLACK, planar = PLANARCONFIG_CONTIG,
           compression = COMPRESSION_NONE, format = SAMPLEFORMAT_UINT;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  if (compression == COMPRESSION_JPEG && photometric == PHOTOMETRIC_YCBCR) {
    // As Pillow: libjpeg converts to RGB.
    TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    photometric = PHOTOMETRIC_RGB;
  }
  if (std::string why = declaredTooLarge(tif, width, height, spp); !why.empty()) return why;
  const bool gray = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE;
  const bool palette = photometric == PHOTOMETRIC_PALETTE;
  const bool rgb = photometric == PHOTOMETRIC_RGB && spp >= 3;
  // CMYK: Pillow's cmyk2rgb, c' = clip(255 - k - c * (255 - k) / 255) with MULDIV255 rounding.
  const bool cmyk = photometric == PHOTOMETRIC_SEPARATED && spp >= 4 && bits == 8;
  const bool lowBits = (bits == 1 || bits == 2 || bits == 4) && spp == 1 && (gray || palette);
  const bool direct = planar == PLANARCONFIG_CONTIG && format == SAMPLEFORMAT_UINT &&
                      (lowBits || (bits == 8 && (gray || palette || rgb || cmyk)) ||
                       (bits == 16 && (photometric == PHOTOMETRIC_MINISBLACK || rgb)));
  if (!direct || (lowBits && TIFFIsTiled(tif))) {
    // Other layouts (separate planes, LAB, float samples, ...): libtiff's own conversion.
    std::vector<uint32_t> raster(size_t(width) * height);
    if (!TIFFReadRGBAImageOriented(tif, uint32_t(width), uint32_t(height), raster.data(),
                                   ORIENTATION_TOPLEFT, 1)) {
      return t.failure("cannot decode the TIFF image");
    }
    for (size_t i = 0; i < raster.size(); ++i) {
      out[3 * i] = uint8_t(TIFFGetR(raster[i]));
      out[3 * i + 1] = uint8_t(TIFFGetG(raster[i]));
      out[3 * i + 2] = uint8_t(TIFFGetB(raster[i]));
    }
    return {};
  }
  uint16_t *red = nullptr, *green = nullptr, *blue = nullptr;
  if (palette && !TIFFGetField(tif, TIFFTAG_COLORMAP, &red, &green, &blue)) {
    return "the palette TIFF image has no colour map";
  }
  std::vector<uint8_t> rows;
  size_t rowBytes = 0;
  std::string error = tiffReadRows(t, width, height, rows, &rowBytes);
  if (!error.empty()) return error;
  const size_t need = (size_t(width) * spp * bits + 7) / 8;
  if (rowBytes < need) return "unexpected TIFF row size";
  const unsigned maxValue = (1u << std::min<unsigned>(bits, 8)) - 1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = rows.data() + rowBytes * y;
    uint8_t* o = out + size_t(y) * width * 3;
    for (int x = 0; x < width; ++x, o += 3) {
      if (bits == 16) {
        const auto* s = reinterpret_cast<const uint16_t*>(row) + size_t(x) * spp;  // native order
        if (rgb) {
          // Pillow's RGB;16 unpackers keep the high byte.
          o[0] = uint8_t(s[0] >> 8), o[1] = uint8_t(s[1] >> 8), o[2] = uint8_t(s[2] >> 8);
        } else {
          // Mode I;16: converting to RGB clips at 255.
          o[0] = o[1] = o[2] = uint8_t(std::min<unsigned>(s[0], 255));
        }
      } else if (cmyk) {
        const uint8_t* s = row + size_t(x) * spp;
        const int nk = 255 - s[3];
        for (int k = 0; k < 3; ++k) {
          const int t = s[k] * nk + 128;
          o[k] = uint8_t(std::clamp(nk - (((t >> 8) + t) >> 8), 0, 255));
        }
      } else if (rgb) {
        const uint8_t* s = row + size_t(x) * spp;
        o[0] = s[0], o[1] = s[1], o[2] = s[2];  // extra samples (alpha) dropped
      } else if (palette) {
        const unsigned i = sampleAt(row, size_t(x) * spp, bits);
        if (i > maxValue) return "palette index outside the colour map";
        // Pillow keeps the high byte of each 16-bit colour-map entry.
        o[0] = uint8_t(red[i] >> 8), o[1] = uint8_t(green[i] >> 8), o[2] = uint8_t(blue[i] >> 8);
      } else {
        // Gray: 1, 2 and 4 bits scaled to 8 by bit replication (Pillow's 1, L;2 and L;4), white
        // as zero inverted (Pillow's *;I rawmodes).
        unsigned v = sampleAt(row, size_t(x) * spp, bits) * (255 / maxValue);
        if (photometric == PHOTOMETRIC_MINISWHITE) v = 255 - v;
        o[0] = o[1] = o[2] = uint8_t(v);
      }
    }
  }
  return {};
}

}  // namespace fixres::image::formats

#endif  // FIXRES_WITH_TIFF

namespace fixres::image {
namespace {

bool tiffSniff(const uint8_t* d, size_t n) {
  return n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0 ||
                    std::memcmp(d, "II+\0", 4) == 0 || std::memcmp(d, "MM\0+", 4) == 0);
}

}  // namespace

const Codec& tiffCodec() {
#if FIXRES_WITH_TIFF
  static const Codec kCodec{"tiff",    "TIFF", {"tif", "tiff"},   /*imageFolder=*/true,
                            tiffSniff, "",     formats::tiffSize, formats::tiffDecode};
#else
  static const Codec kCodec{
      "tiff",  "TIFF", {"tif", "tiff"}, /*imageFolder=*/true, tiffSniff, "built without libtiff",
      nullptr, nullptr};
#endif
  return kCodec;
}

}  // namespace fixres::image
