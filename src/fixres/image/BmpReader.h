// BMP files for DecodeFormats: stb_image's decoder, with Pillow's rules where the two differ
// (16-bit pixels, truncated pixel arrays). Defined only in a build with FIXRES_WITH_BMP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

// The image size from the BMP header; an empty string on success, else the reason.
std::string bmpSize(const uint8_t* data, size_t size, int* width, int* height);

// The whole image as 8-bit RGB into `out` (width * height * 3 bytes, rows packed).
std::string bmpDecode(const uint8_t* data, size_t size, int width, int height, uint8_t* out);

}  // namespace fixres::image::formats
