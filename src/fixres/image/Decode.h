// Decoding JPEG (libjpeg-turbo) and PNG (libpng) files to 8-bit RGB, as PIL's
// Image.open(f).convert("RGB") does: same libjpeg settings (islow IDCT, fancy upsampling),
// CMYK/YCCK via PIL's Adobe-inverted CMYK -> RGB formula, grayscale replicated, palette
// expanded, alpha dropped (not composited), 16-bit channels reduced to their high byte except
// 16-bit grayscale, which PIL reads as mode "I" and clips to 255. EXIF orientation is ignored.
// BMP, WebP, TIFF and PNM (PBM/PGM/PPM) are read too, each by its codec (Codec.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixres/image/Codec.h"
#include "fixres/image/Image.h"

namespace fixres::image {

// PIL's decompression-bomb limit (2 x Image.MAX_IMAGE_PIXELS): larger headers are rejected
// before any pixel buffer is allocated.
constexpr int64_t kDefaultMaxPixels = 178956970;

struct DecodeOptions {
  int64_t maxPixels = kDefaultMaxPixels;  // <= 0: no limit
};

// Reads the header on construction (DataError naming `name` for an unreadable or oversize file)
// and then decodes the whole image or a region of it. `data` must outlive the decoder.
// Not thread-safe; use one decoder per image and thread.
class Decoder {
 public:
  Decoder(const uint8_t* data, size_t size, std::string name, DecodeOptions options = {});
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  // The file's format (Codec.h).
  const Codec& codec() const { return *codec_; }

  // The whole image. Call at most one of decode() / decodeRegion() per decoder.
  Image decode();
  // Only `region` (clamped by the caller inside the image): identical pixels to decode() then
  // cropping, but JPEG skips the IDCT and colour conversion of rows and columns outside it.
  Image decodeRegion(const Rect& region);
  // The same as a view into `buffer` (reused: no allocation when its capacity suffices), whose
  // rows may be wider than the region: the decoder writes them in place, without a copy. Valid
  // while `buffer` lives and is not modified.
  ImageView decodeRegionView(const Rect& region, Image& buffer);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::string name_;
  int width_ = 0;
  int height_ = 0;
  const Codec* codec_ = nullptr;
};

// The codec rows of the formats Decoder reads itself (in the registry, Codecs.cpp).
const Codec& jpegCodec();
const Codec& pngCodec();

// The largest image file read: 1 GiB, an uncompressed 16-bit RGB image at the pixel limit
// (178956970 x 6 bytes). A larger file is a bad image, refused before it is read.
constexpr uint64_t kMaxImageFileBytes = uint64_t(1) << 30;

// Whole-file helpers. DataError naming the path on any failure (a file larger than
// kMaxImageFileBytes among them).
std::vector<uint8_t> readFile(const std::string& path);
Image decodeImage(const uint8_t* data, size_t size, const std::string& name,
                  const DecodeOptions& options = {});
Image decodeFile(const std::string& path, const DecodeOptions& options = {});

}  // namespace fixres::image
