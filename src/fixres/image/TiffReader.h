// TIFF files for DecodeFormats: libtiff reading from memory, the common layouts unpacked by
// Pillow's rules, the others through libtiff's RGBA conversion. Defined only in a build with
// FIXRES_WITH_TIFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

// The image size from the first directory; an empty string on success, else the reason.
std::string tiffSize(const uint8_t* data, size_t size, int* width, int* height);

// The first image as 8-bit RGB into `out` (width * height * 3 bytes, rows packed).
std::string tiffDecode(const uint8_t* data, size_t size, int width, int height, uint8_t* out);

}  // namespace fixres::image::formats
