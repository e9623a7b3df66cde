// WebP decoding (WebpReader.h): the first frame of libwebp's animation decoder, alpha dropped.
#include "fixres/image/WebpReader.h"

#include <cstring>

#include "fixres/image/Codec.h"

#if FIXRES_WITH_WEBP
#include <webp/decode.h>
#include <webp/demux.h>

namespace fixres::image::formats {
namespace {

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

}  // namespace

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

}  // namespace fixres::image::formats

#endif  // FIXRES_WITH_WEBP

namespace fixres::image {
namespace {

bool webpSniff(const uint8_t* d, size_t n) {
  return n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0;
}

}  // namespace

const Codec& webpCodec() {
#if FIXRES_WITH_WEBP
  static const Codec kCodec{"webp",    "WebP", {"webp"},          /*imageFolder=*/true,
                            webpSniff, "",     formats::webpSize, formats::webpDecode};
#else
  static const Codec kCodec{
      "webp",  "WebP", {"webp"}, /*imageFolder=*/true, webpSniff, "built without libwebp",
      nullptr, nullptr};
#endif
  return kCodec;
}

}  // namespace fixres::image
