// BMP (stb_image), WebP (libwebp's animation decoder, which Pillow uses for every WebP file),
// TIFF (libtiff) and PNM (read here: a text header and raw or plain samples, scaled by Pillow's
// PpmImagePlugin rules, which no library reproduces).
#include "fixres/image/DecodeFormats.h"

#if FIXRES_WITH_BMP
// stb_image's BMP decoder alone, compiled into this file with internal linkage.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image.h>
#pragma GCC diagnostic pop
#endif
#if FIXRES_WITH_TIFF
#include <tiffio.h>
#endif
#if FIXRES_WITH_WEBP
#include <webp/decode.h>
#include <webp/demux.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace fixres::image::formats {
namespace {

bool startsWith(const uint8_t* d, size_t n, const char* prefix, size_t length) {
  return n >= length && std::memcmp(d, prefix, length) == 0;
}

// ---- BMP -------------------------------------------------------------------------------------
#if FIXRES_WITH_BMP
std::string bmpSize(const uint8_t* d, size_t n, int* w, int* h) {
  int comp = 0;
  if (n > size_t(INT32_MAX) || !stbi_info_from_memory(d, int(n), w, h, &comp)) {
    return std::string("cannot read the BMP header (") + stbi_failure_reason() + ")";
  }
  *h = std::abs(*h);  // stb_image gives a top-down file's height as stored: negative
  return {};
}

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

std::string bmpDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
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

#endif  // FIXRES_WITH_BMP

// ---- WebP ------------------------------------------------------------------------------------
#if FIXRES_WITH_WEBP
// Pillow decodes every WebP file, still or animated, with WebPAnimDecoder into RGBA and drops
// the alpha; the first frame is the image.
struct AnimDecoder {
  WebPAnimDecoder* decoder = nullptr;
  ~AnimDecoder() {
    if (decoder) WebPAnimDecoderDelete(decoder);
  }
};

std::string webpOpen(const uint8_t* d, size_t n, AnimDecoder& anim, WebPAnimInfo& info) {
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return "libwebp version mismatch";
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  WebPData webp{d, n};
  anim.decoder = WebPAnimDecoderNew(&webp, &options);
  if (!anim.decoder) return "cannot read the WebP file (malformed or truncated)";
  if (!WebPAnimDecoderGetInfo(anim.decoder, &info)) return "cannot read the WebP header";
  return {};
}

std::string webpSize(const uint8_t* d, size_t n, int* w, int* h) {
  // The header alone: WebPGetFeatures reads the canvas size without decoding.
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(d, n, &features) != VP8_STATUS_OK) {
    return "cannot read the WebP header (malformed or truncated)";
  }
  *w = features.width;
  *h = features.height;
  return {};
}

std::string webpDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  AnimDecoder anim;
  WebPAnimInfo info{};
  std::string error = webpOpen(d, n, anim, info);
  if (!error.empty()) return error;
  if (int(info.canvas_width) != width || int(info.canvas_height) != height) {
    return "the WebP canvas size differs from its header";
  }
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(anim.decoder, &rgba, &timestamp) || rgba == nullptr) {
    return "cannot decode the WebP image (corrupt or truncated)";
  }
  const size_t pixels = size_t(width) * height;
  for (size_t i = 0; i < pixels; ++i) {
    out[3 * i] = rgba[4 * i];
    out[3 * i + 1] = rgba[4 * i + 1];
    out[3 * i + 2] = rgba[4 * i + 2];
  }
  return {};
}

#endif  // FIXRES_WITH_WEBP

// ---- TIFF ------------------------------------------------------------------------------------
#if FIXRES_WITH_TIFF
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

// Sample `x` of a row of `bits`-bit samples (1, 2, 4, 8; MSB first, as libtiff hands them out).
inline unsigned sampleAt(const uint8_t* row, size_t x, int bits) {
  if (bits == 8) return row[x];
  const size_t bit = x * size_t(bits);
  return (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
}

std::string tiffDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
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

#endif  // FIXRES_WITH_TIFF

// ---- PNM -------------------------------------------------------------------------------------
bool pnmSpace(uint8_t c) {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0b || c == 0x0c || c == 0x0d;
}

struct PnmHeader {
  char kind = 0;  // '1' .. '6'
  int width = 0, height = 0;
  unsigned maxval = 1;
  size_t dataOffset = 0;
};

// Pillow's _read_token: whitespace skipped before a token and ending it (consumed), '#' to the
// end of the line ignored anywhere, at most 10 characters.
bool pnmToken(const uint8_t* d, size_t n, size_t& pos, std::string& token, std::string& error) {
  token.clear();
  while (token.size() <= 10) {
    if (pos >= n) break;
    const uint8_t c = d[pos++];
    if (pnmSpace(c)) {
      if (token.empty()) continue;
      break;
    }
    if (c == '#') {
      while (pos < n && d[pos] != '\r' && d[pos] != '\n') ++pos;
      if (pos < n) ++pos;
      continue;
    }
    token += char(c);
  }
  if (token.empty()) {
    error = "reached the end of the file while reading the PNM header";
    return false;
  }
  if (token.size() > 10) {
    error = "token too long in the PNM header: " + token;
    return false;
  }
  return true;
}

bool pnmNumber(const std::string& token, int64_t* value) {
  if (token.empty() || token.size() > 10) return false;
  int64_t v = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

std::string pnmReadHeader(const uint8_t* d, size_t n, PnmHeader& h) {
  if (n < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6' || !pnmSpace(d[2])) {
    return "not a PNM file";
  }
  h.kind = char(d[1]);
  size_t pos = 3;
  std::string token, error;
  const bool bitmap = h.kind == '1' || h.kind == '4';
  int64_t values[3] = {0, 0, 1};
  const char* names[3] = {"width", "height", "maxval"};
  for (int i = 0; i < (bitmap ? 2 : 3); ++i) {
    if (!pnmToken(d, n, pos, token, error)) return error;
    if (!pnmNumber(token, &values[i])) return std::string("invalid PNM ") + names[i] + ": " + token;
  }
  if (values[0] <= 0 || values[1] <= 0 || values[0] > INT32_MAX || values[1] > INT32_MAX) {
    return "invalid PNM size " + std::to_string(values[0]) + "x" + std::to_string(values[1]);
  }
  if (!bitmap && (values[2] <= 0 || values[2] >= 65536)) {
    return "PNM maxval must be greater than 0 and less than 65536 (is " +
           std::to_string(values[2]) + ")";
  }
  h.width = int(values[0]);
  h.height = int(values[1]);
  h.maxval = unsigned(values[2]);
  h.dataOffset = pos;
  return {};
}

// Pillow's scaling of a sample to mode L/RGB (outMax 255) or I (outMax 65535): Python's
// round(value / maxval * outMax), which rounds half to even as nearbyint does by default.
inline unsigned pnmScale(unsigned value, unsigned maxval, unsigned outMax) {
  return unsigned(std::nearbyint(double(value) / double(maxval) * double(outMax)));
}

std::string pnmDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  PnmHeader h;
  std::string error = pnmReadHeader(d, n, h);
  if (!error.empty()) return error;
  if (h.width != width || h.height != height) return "the PNM size changed while decoding";
  const size_t pixels = size_t(width) * height;
  const int bands = (h.kind == '3' || h.kind == '6') ? 3 : 1;
  // Gray with maxval above 255 is Pillow's mode I (up to 65535), clipped at 255 in RGB.
  const bool modeI = bands == 1 && h.kind != '1' && h.kind != '4' && h.maxval > 255;
  const unsigned outMax = modeI ? 65535 : 255;
  const auto put = [&](size_t sample, unsigned v) {
    if (modeI) v = std::min(v, 255u);
    if (bands == 3) {
      out[sample] = uint8_t(v);
    } else {
      out[3 * sample] = out[3 * sample + 1] = out[3 * sample + 2] = uint8_t(v);
    }
  };
  const uint8_t* data = d + h.dataOffset;
  const size_t available = n - h.dataOffset;
  const size_t samples = pixels * size_t(bands);
  if (h.kind == '4') {
    const size_t rowBytes = (size_t(width) + 7) / 8;
    if (available < rowBytes * height) return "image file is truncated";
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const bool black = (data[rowBytes * y + x / 8] >> (7 - x % 8)) & 1;  // 1 is black
        put(size_t(y) * width + x, black ? 0 : 255);
      }
    }
    return {};
  }
  if (h.kind == '5' || h.kind == '6') {
    const size_t bytes = h.maxval < 256 ? 1 : 2;
    if (available < samples * bytes) return "image file is truncated";
    for (size_t i = 0; i < samples; ++i) {
      unsigned v = bytes == 1 ? data[i] : unsigned(data[2 * i] << 8 | data[2 * i + 1]);
      if (h.maxval == 255 || (modeI && h.maxval == 65535)) {
        // Raw decoders: the stored value as it is.
      } else {
        v = std::min(outMax, pnmScale(v, h.maxval, outMax));
      }
      put(i, v);
    }
    return {};
  }
  // Plain (text) samples. Pillow removes each comment ('#' to the end of the line, the line end
  // included, joining what stands either side) and then splits the rest at whitespace.
  std::string text;
  text.reserve(available);
  for (size_t pos = 0; pos < available; ++pos) {
    if (data[pos] != '#') {
      text += char(data[pos]);
      continue;
    }
    while (pos < available && data[pos] != '\r' && data[pos] != '\n') ++pos;
  }
  size_t filled = 0;
  std::string token;
  for (size_t pos = 0; pos <= text.size() && filled < samples; ++pos) {
    const bool end = pos == text.size() || pnmSpace(uint8_t(text[pos]));
    if (h.kind == '1') {
      // Bitmaps: every character is a sample, whitespace optional; 1 is black.
      if (end) continue;
      if (text[pos] != '0' && text[pos] != '1') {
        return std::string("invalid token for this mode: ") + text[pos];
      }
      put(filled++, text[pos] == '1' ? 0 : 255);
      continue;
    }
    if (!end) {
      token += text[pos];
      if (token.size() > 10) return "token too long in the PNM data: " + token;
      continue;
    }
    if (token.empty()) continue;
    int64_t value = 0;
    if (!pnmNumber(token, &value)) return "invalid PNM sample: " + token;
    if (value > int64_t(h.maxval)) {
      return "channel value too large for this mode: " + std::to_string(value);
    }
    put(filled++, pnmScale(unsigned(value), h.maxval, outMax));
    token.clear();
  }
  if (filled < samples) return "not enough image data";
  return {};
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
    case Kind::kPnm: {
      PnmHeader h;
      std::string error = pnmReadHeader(d, n, h);
      *width = h.width;
      *height = h.height;
      return error;
    }
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
