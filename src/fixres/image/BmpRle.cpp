// Run-length encoded BMPs (BmpRle.h).
#include "fixres/image/BmpRle.h"

#include <algorithm>
#include <vector>

namespace fixres::image::formats {
namespace {

uint32_t le16(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8;
}
uint32_t le32(const uint8_t* p) {
  return le16(p) | le16(p + 2) << 16;
}

struct RleHeader {
  uint64_t width = 0, height = 0;
  bool topDown = false, rle4 = false;
  uint32_t bits = 0, colors = 0, headerSize = 0;
  uint64_t offset = 0;  // of the pixel data
};

// The header as Pillow reads it: width unsigned, a height whose top byte is 0xFF top-down.
RleHeader headerOf(const uint8_t* d) {
  RleHeader h;
  h.headerSize = le32(d + 14);
  h.width = le32(d + 18);
  const uint32_t rawHeight = le32(d + 22);
  h.topDown = d[25] == 0xFF;
  h.height = h.topDown ? (uint64_t(1) << 32) - rawHeight : rawHeight;
  h.bits = le16(d + 28);
  h.rle4 = le32(d + 30) == 2;
  h.colors = le32(d + 46) ? le32(d + 46) : (1u << std::min<uint32_t>(h.bits, 16));
  h.offset = le32(d + 10);
  // A pixel offset pointing at the palette right after the header skips it (Pillow).
  if (h.offset == 14 + uint64_t(h.headerSize)) h.offset += 4 * uint64_t(h.colors);
  return h;
}

// The palette indices, row after row as stored; false when the data ends before the last one.
bool rleIndices(const uint8_t* d, size_t n, const RleHeader& h, std::vector<uint8_t>& data) {
  const uint64_t total = h.width * h.height;
  uint64_t x = 0, at = h.offset;
  auto zeros = [&](uint64_t count) { data.resize(std::min(data.size() + count, total), 0); };
  while (data.size() < total) {
    if (at + 2 > n) break;
    const uint8_t count = d[at], byte = d[at + 1];
    at += 2;
    if (count > 0) {  // encoded: `count` pixels, clipped at the row's end
      const uint64_t pixels = x + count > h.width ? (x < h.width ? h.width - x : 0) : count;
      for (uint64_t k = 0; k < pixels && data.size() < total; ++k)
        data.push_back(h.rle4 ? (k % 2 ? byte & 0x0F : byte >> 4) : byte);
      x += pixels;
    } else if (byte == 0) {  // end of line
      if (h.width > 0 && data.size() % h.width) zeros(h.width - data.size() % h.width);
      x = 0;
    } else if (byte == 1) {  // end of bitmap
      break;
    } else if (byte == 2) {  // delta: right, up
      if (at + 2 > n) break;
      zeros(uint64_t(d[at]) + uint64_t(d[at + 1]) * h.width);
      at += 2;
      x = h.width > 0 ? data.size() % h.width : 0;
    } else {  // absolute: `byte` pixels stored as they are
      const uint64_t bytes = h.rle4 ? byte / 2 : byte;
      const uint64_t present = std::min<uint64_t>(bytes, n - at);
      for (uint64_t k = 0; k < present && data.size() < total; ++k) {
        const uint8_t v = d[at + k];
        if (h.rle4) {
          data.push_back(v >> 4);
          if (data.size() < total) data.push_back(v & 0x0F);
        } else {
          data.push_back(v);
        }
      }
      at += present;
      if (present < bytes) break;
      x += byte;
      if (at % 2) ++at;  // word-aligned, by position in the file
    }
  }
  return data.size() >= total;
}

}  // namespace

bool isRleBmp(const uint8_t* d, size_t n) {
  if (n < 54 || d[0] != 'B' || d[1] != 'M') return false;
  const uint32_t header = le32(d + 14), compression = le32(d + 30);
  return (header == 40 || header == 64 || header == 108 || header == 124) &&
         (compression == 1 || compression == 2);
}

std::string rleBmpSize(const uint8_t* d, size_t n, int* width, int* height) {
  const RleHeader h = headerOf(d);
  if (h.bits != 1 && h.bits != 4 && h.bits != 8)
    return "run-length encoded BMP of " + std::to_string(h.bits) + " bits per pixel";
  if (h.width == 0 || h.height == 0 || h.width > INT32_MAX || h.height > INT32_MAX)
    return "the BMP file has no valid image size";
  // Pillow (9.4 and 12) takes a declared palette of 1 to 65536 entries; what the file holds of it
  // must be 256 entries at most (rleBmpDecode).
  if (h.colors == 0 || h.colors > 65536)
    return "unsupported BMP palette size (" + std::to_string(h.colors) + ")";
  *width = int(h.width);
  *height = int(h.height);
  return {};
}

std::string rleBmpDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  const RleHeader h = headerOf(d);
  std::vector<uint8_t> data;
  data.reserve(size_t(width) * height);
  if (!rleIndices(d, n, h, data)) return "image file is truncated (not enough RLE image data)";
  // The palette: `colors` BGRX entries after the header, as many as the file holds (Pillow reads
  // the declared size from there, whatever follows). It is a gray ramp, and ignored, when every
  // declared entry is present and entry i is (i mod 256) three times, as Pillow 12 checks it.
  const uint64_t paletteAt = 14 + uint64_t(h.headerSize);
  const uint64_t entries = std::min<uint64_t>(h.colors, paletteAt < n ? (n - paletteAt) / 4 : 0);
  // More than 256 entries present: Pillow refuses the palette ("invalid palette size").
  if (entries > 256) return "invalid BMP palette size (" + std::to_string(entries) + " entries)";
  uint8_t rgb[256][3] = {};
  bool grayRamp = entries == h.colors;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint8_t* e = d + paletteAt + 4 * i;
    rgb[i][0] = e[2], rgb[i][1] = e[1], rgb[i][2] = e[0];
    const uint8_t ramp = static_cast<uint8_t>(i & 255);
    grayRamp = grayRamp && e[0] == ramp && e[1] == ramp && e[2] == ramp;
  }
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = data.data() + size_t(h.topDown ? y : height - 1 - y) * width;
    uint8_t* o = out + size_t(y) * width * 3;
    for (int x = 0; x < width; ++x, o += 3) {
      const uint8_t v = row[x];
      if (grayRamp) {
        o[0] = o[1] = o[2] = v;
      } else {
        o[0] = rgb[v][0], o[1] = rgb[v][1], o[2] = rgb[v][2];
      }
    }
  }
  return {};
}

}  // namespace fixres::image::formats
