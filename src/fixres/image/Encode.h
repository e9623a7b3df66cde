// PNG encoding (libpng): what `fixres import` writes its images with.
#pragma once

#include <cstdint>
#include <string>

namespace fixres::image {

// An 8-bit grayscale or RGB PNG (channels 1 or 3; pixels rows x width x channels, packed); a
// plain write (no fsync), for bulk outputs whose folder is published atomically. OutputError
// (exit code 6) naming the path when it cannot be written.
void writePng(const std::string& path, int width, int height, int channels, const uint8_t* pixels);

}  // namespace fixres::image
