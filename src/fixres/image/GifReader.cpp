// GIF (87a and 89a): the first frame, as Pillow 9's GifImagePlugin loads it and convert("RGB")
// maps it. The logical screen grows to hold the frame; the screen outside the frame holds the
// frame's transparent index when its graphic control extension names one, else index 0; indices
// map through the frame's colour table (local, else global); an index past the table reads as
// black, as Pillow 12 reads it (Pillow 9.4 read it as grey), and a file without any table as
// greys (Pillow's mode "L"). Transparency is dropped, as convert("RGB") drops it. Not an
// ImageFolder format (torchvision's IMG_EXTENSIONS has no .gif): read when named, never listed in a
// dataset folder.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "fixres/image/Codec.h"

namespace fixres::image {
namespace {

struct GifFrame {
  int screenWidth = 0, screenHeight = 0;  // grown to hold the frame
  int left = 0, top = 0, width = 0, height = 0;
  bool interlaced = false;
  int transparent = -1;                // the first frame's transparent index, -1: none
  std::array<uint8_t, 768> palette{};  // RGB of 256 entries
  int minCodeSize = 0;
  size_t data = 0;  // offset of the LZW sub-blocks
};

int u16(const uint8_t* p) {
  return p[0] | (p[1] << 8);
}

// The first frame's header fields; an empty string, else the reason.
std::string gifHeader(const uint8_t* d, size_t n, GifFrame& f) {
  if (n < 13) return "image file is truncated (GIF header)";
  f.screenWidth = u16(d + 6);
  f.screenHeight = u16(d + 8);
  // Without a colour table the indices are greys (Pillow's mode "L"), and so with a table that is
  // that ramp's start (Pillow finds no palette needed); another table replaces every entry, zeros
  // past it.
  const auto ramp = [&f] {
    for (int i = 0; i < 256; ++i)
      f.palette[3 * i] = f.palette[3 * i + 1] = f.palette[3 * i + 2] = static_cast<uint8_t>(i);
  };
  ramp();
  const auto table = [&](size_t& pos, int flags) {
    const size_t bytes = size_t(3) << ((flags & 7) + 1);
    if (pos + bytes > n) return false;
    bool grey = true;
    for (size_t i = 0; i < bytes && grey; ++i) grey = d[pos + i] == i / 3;
    f.palette.fill(0);
    std::memcpy(f.palette.data(), d + pos, bytes);
    if (grey) ramp();
    pos += bytes;
    return true;
  };
  size_t pos = 13;
  if ((d[10] & 0x80) && !table(pos, d[10])) return "image file is truncated (colour table)";
  while (pos < n) {
    const uint8_t tag = d[pos++];
    if (tag == ';') break;
    if (tag == '!') {  // an extension: its label, then sub-blocks
      if (pos >= n) break;
      const uint8_t label = d[pos++];
      bool first = true;
      while (pos < n && d[pos] != 0) {
        const size_t size = d[pos];
        if (pos + 1 + size > n) return "image file is truncated (extension)";
        if (label == 0xF9 && first && size >= 4) {
          f.transparent = (d[pos + 1] & 1) ? d[pos + 4] : -1;
        }
        first = false;
        pos += 1 + size;
      }
      ++pos;  // the terminator
    } else if (tag == ',') {
      if (pos + 9 > n) return "image file is truncated (image descriptor)";
      f.left = u16(d + pos);
      f.top = u16(d + pos + 2);
      f.width = u16(d + pos + 4);
      f.height = u16(d + pos + 6);
      const uint8_t flags = d[pos + 8];
      f.interlaced = (flags & 0x40) != 0;
      pos += 9;
      if ((flags & 0x80) && !table(pos, flags)) return "image file is truncated (colour table)";
      if (pos >= n) return "image file is truncated (image data)";
      f.minCodeSize = d[pos];
      f.data = pos + 1;
      f.screenWidth = std::max(f.screenWidth, f.left + f.width);
      f.screenHeight = std::max(f.screenHeight, f.top + f.height);
      if (f.minCodeSize < 1 || f.minCodeSize > 11) return "broken GIF data (LZW code size)";
      return {};
    }
    // Pillow passes over any other byte between blocks.
  }
  return "image file is truncated (no image in the GIF file)";
}

// The LZW codes of the sub-blocks from `pos` decoded into `pixels` (`count` indices): an empty
// string once `count` are written, else the reason.
std::string gifLzw(const uint8_t* d, size_t n, const GifFrame& f, std::vector<uint8_t>& pixels) {
  const int clear = 1 << f.minCodeSize, end = clear + 1;
  std::vector<uint16_t> prefix(4096);
  std::vector<uint8_t> suffix(4096), stack(4097);
  int codeSize = f.minCodeSize + 1, next = clear + 2, previous = -1;
  uint8_t firstOfPrevious = 0;
  uint32_t bits = 0;
  int held = 0;
  size_t pos = f.data, block = 0, written = 0;
  const size_t count = pixels.size();
  for (int c = 0; c < clear; ++c) suffix[c] = static_cast<uint8_t>(c);
  while (written < count) {
    while (held < codeSize) {
      if (block == 0) {
        if (pos >= n || d[pos] == 0) return "image file is truncated (GIF image data)";
        block = d[pos++];
      }
      if (pos >= n) return "image file is truncated (GIF image data)";
      bits |= uint32_t(d[pos++]) << held;
      held += 8;
      --block;
    }
    const int code = static_cast<int>(bits & ((1u << codeSize) - 1));
    bits >>= codeSize;
    held -= codeSize;
    if (code == clear) {
      codeSize = f.minCodeSize + 1;
      next = clear + 2;
      previous = -1;
      continue;
    }
    if (code == end) return "image file is truncated (GIF image data ends early)";
    if (code > next || (previous < 0 && code >= clear)) return "broken GIF data (LZW code)";
    size_t depth = 0;
    int walk = code;
    if (code == next) {  // the string of `previous` and its own first index
      stack[depth++] = firstOfPrevious;
      walk = previous;
    }
    while (walk >= clear) {
      stack[depth++] = suffix[walk];
      walk = prefix[walk];
    }
    stack[depth++] = static_cast<uint8_t>(walk);
    const uint8_t first = static_cast<uint8_t>(walk);
    while (depth > 0 && written < count) pixels[written++] = stack[--depth];
    if (previous >= 0 && next < 4096) {
      prefix[next] = static_cast<uint16_t>(previous);
      suffix[next] = first;
      ++next;
      if (next == (1 << codeSize) && codeSize < 12) ++codeSize;
    }
    previous = code;
    firstOfPrevious = first;
  }
  // The frame is whole, but a data block the file cuts short is still a truncated file (Pillow
  // reads each block whole).
  if (block > 0 && pos + block > n) return "image file is truncated (GIF image data)";
  return {};
}

std::string gifSize(const uint8_t* d, size_t n, int* width, int* height) {
  GifFrame f;
  const std::string error = gifHeader(d, n, f);
  if (!error.empty()) return error;
  *width = f.screenWidth;
  *height = f.screenHeight;
  return {};
}

std::string gifDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  GifFrame f;
  std::string error = gifHeader(d, n, f);
  if (!error.empty()) return error;
  if (f.screenWidth != width || f.screenHeight != height) return "the GIF header changed";
  // An empty frame (0 wide or 0 high) is refused, as Pillow 12 refuses it.
  if (f.width == 0 || f.height == 0)
    return "broken GIF data (a frame of " + std::to_string(f.width) + "x" +
           std::to_string(f.height) + " pixels)";
  std::vector<uint8_t> frame(size_t(f.width) * f.height);
  if (!(error = gifLzw(d, n, f, frame)).empty()) return error;
  // The screen: the transparent index (Pillow fills the first frame with it) or 0.
  std::vector<uint8_t> screen(size_t(width) * height,
                              uint8_t(f.transparent < 0 ? 0 : f.transparent));
  // Interlaced rows come in four passes: every 8th from 0, every 8th from 4, every 4th from 2,
  // every 2nd from 1.
  std::vector<int> rows;
  if (f.interlaced) {
    constexpr int kPasses[4][2] = {{0, 8}, {4, 8}, {2, 4}, {1, 2}};
    for (const auto& pass : kPasses)
      for (int y = pass[0]; y < f.height; y += pass[1]) rows.push_back(y);
  } else {
    for (int y = 0; y < f.height; ++y) rows.push_back(y);
  }
  for (size_t r = 0; r < rows.size(); ++r)
    std::memcpy(&screen[size_t(f.top + rows[r]) * width + f.left], &frame[r * f.width], f.width);
  for (size_t i = 0; i < screen.size(); ++i) std::memcpy(out + 3 * i, &f.palette[3 * screen[i]], 3);
  return {};
}

bool gifSniff(const uint8_t* d, size_t n) {
  return n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0);
}

}  // namespace

const Codec& gifCodec() {
  static const Codec kCodec{"gif",    "GIF", {"gif"}, /*imageFolder=*/false,
                            gifSniff, "",    gifSize, gifDecode};
  return kCodec;
}

}  // namespace fixres::image
