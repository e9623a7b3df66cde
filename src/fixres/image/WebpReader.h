// WebP files for DecodeFormats: libwebp's animation decoder, which Pillow uses for every WebP
// file, still or animated. Defined only in a build with FIXRES_WITH_WEBP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

// The canvas size from the WebP header; an empty string on success, else the reason.
std::string webpSize(const uint8_t* data, size_t size, int* width, int* height);

// The first frame as 8-bit RGB into `out` (width * height * 3 bytes, rows packed).
std::string webpDecode(const uint8_t* data, size_t size, int width, int height, uint8_t* out);

}  // namespace fixres::image::formats
