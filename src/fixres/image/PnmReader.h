// PNM files (PBM, PGM, PPM) for DecodeFormats, read here: a text header and raw or plain samples,
// scaled by Pillow's PpmImagePlugin rules, which no library reproduces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

// PNM's whitespace (Pillow's b_whitespace), which also ends the magic number.
inline bool pnmSpace(uint8_t c) {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0b || c == 0x0c || c == 0x0d;
}

// The image size from the header; an empty string on success, else the reason (the size is then
// 0 x 0).
std::string pnmSize(const uint8_t* data, size_t size, int* width, int* height);

// The whole image as 8-bit RGB into `out` (width * height * 3 bytes, rows packed).
std::string pnmDecode(const uint8_t* data, size_t size, int width, int height, uint8_t* out);

}  // namespace fixres::image::formats
