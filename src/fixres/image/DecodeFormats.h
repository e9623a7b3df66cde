// Decoding the image formats besides JPEG and PNG that torchvision's ImageFolder lists (.bmp,
// .webp, .tif/.tiff, .ppm/.pgm), to 8-bit RGB as PIL's Image.open(f).convert("RGB") does.
// Used by Decoder (Decode.h); the functions return an empty string on success, else the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

enum class Kind { kNone, kBmp, kWebp, kTiff, kPnm };

// The format of a file from its first bytes (PIL's _accept rules), kNone for anything else.
Kind sniff(const uint8_t* data, size_t size);

// The image size from the header, without decoding pixels.
std::string readSize(Kind kind, const uint8_t* data, size_t size, int* width, int* height);

// The whole image into `out` (width * height * 3 bytes, rows packed).
std::string decodeRgb(Kind kind, const uint8_t* data, size_t size, int width, int height,
                      uint8_t* out);

// The formats this build decodes, e.g. "jpeg png bmp webp tiff pnm" (fixres version). A build
// made with FIXRES_OPTIONAL_DEPS may lack BMP, WebP or TIFF; such files then fail to decode with
// a message naming the missing library.
std::string builtFormats();

}  // namespace fixres::image::formats
