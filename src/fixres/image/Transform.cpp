// Transform pipelines. Each set follows the torchvision composition of the reference; work is
// skipped only where the skipped pixels cannot reach the output: RandomResizedCrop decodes just
// the crop (JPEG region decoding), val resizes just the center-crop window, flips are folded
// into the final write. Each of these is checked against PIL by the reference tests.
#include "fixres/image/Transform.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fixres/common/Error.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"

namespace fixres::image {

const ChoiceTable<TransformKind>& transformKinds() {
  static const ChoiceTable<TransformKind> kTable = {"transform",
                                                    {{"torch", TransformKind::kTorch},
                                                     {"full", TransformKind::kFull},
                                                     {"val", TransformKind::kVal},
                                                     {"val-nocrop", TransformKind::kValNoCrop},
                                                     {"v2-train", TransformKind::kV2Train},
                                                     {"v2-test", TransformKind::kV2Test},
                                                     {"val-crop", TransformKind::kVal},
                                                     {"val_train", TransformKind::kV2Train},
                                                     {"val_test", TransformKind::kV2Test}}};
  return kTable;
}

const ChoiceTable<ResizeMode>& resizeModes() {
  static const ChoiceTable<ResizeMode> kTable = {
      "resize mode", {{"fixres", ResizeMode::kFixres}, {"shorter", ResizeMode::kShorter}}};
  return kTable;
}

const ChoiceTable<Filter>& interpolations() {
  static const ChoiceTable<Filter> kTable = {
      "interpolation", {{"bilinear", Filter::kBilinear}, {"bicubic", Filter::kBicubic}}};
  return kTable;
}

TransformKind parseTransformKind(const std::string& name) {
  return parseChoice(transformKinds(), name, "--transform");
}

std::string transformKindName(TransformKind kind) {
  return choiceName(transformKinds(), kind);
}

ResizeMode parseResizeMode(const std::string& name) {
  return parseChoice(resizeModes(), name, "--resize-mode");
}

int valResizeSize(int inputSize, double cropPct) {
  return static_cast<int>(std::floor(static_cast<double>(inputSize) / cropPct));
}

namespace {
// Python's int(size * a / b) (integer product, then true division), at least 1: an image more
// than `size` times as long as it is wide keeps one pixel across (the reference's PIL resize
// refuses a side of 0 and ends the job).
int scaledSide(int size, int a, int b) {
  return std::max(1, static_cast<int>(static_cast<double>(int64_t(size) * a) / b));
}
}  // namespace

std::array<int, 2> fixresResizeSize(int width, int height, int size, bool largest) {
  if (height < width && largest) return {size, scaledSide(size, height, width)};
  return {scaledSide(size, width, height), size};
}

std::array<int, 2> shorterSideResizeSize(int width, int height, int size) {
  if (width <= height) return {size, scaledSide(size, height, width)};
  return {scaledSide(size, width, height), size};
}

Rect sampleResizedCrop(int width, int height, Rng& rng, double scaleMin, double scaleMax,
                       double ratioMin, double ratioMax) {
  const double area = static_cast<double>(width) * height;
  const double logLo = std::log(ratioMin), logHi = std::log(ratioMax);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double targetArea = area * rng.uniform(scaleMin, scaleMax);
    const double aspect = std::exp(rng.uniform(logLo, logHi));
    const int w = roundHalfEven(std::sqrt(targetArea * aspect));
    const int h = roundHalfEven(std::sqrt(targetArea / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = static_cast<int>(rng.randint(0, height - h));
      const int left = static_cast<int>(rng.randint(0, width - w));
      return Rect{left, top, w, h};
    }
  }
  const double inRatio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (inRatio < std::min(ratioMin, ratioMax)) {
    h = roundHalfEven(w / std::min(ratioMin, ratioMax));
  } else if (inRatio > std::max(ratioMin, ratioMax)) {
    w = roundHalfEven(h * std::max(ratioMin, ratioMax));
  }
  return Rect{(width - w) / 2, (height - h) / 2, w, h};
}

JitterParams sampleColorJitter(Rng& rng, float brightness, float contrast, float saturation,
                               float hue) {
  JitterParams p;
  // A uniformly random order (Fisher-Yates), as torch.randperm(4).
  for (int i = 3; i > 0; --i) std::swap(p.order[i], p.order[rng.randint(0, i)]);
  auto factor = [&](float x) {
    return static_cast<float>(rng.uniform(std::max(0.0, 1.0 - x), 1.0 + x));
  };
  if (brightness > 0) p.useBrightness = true, p.brightness = factor(brightness);
  if (contrast > 0) p.useContrast = true, p.contrast = factor(contrast);
  if (saturation > 0) p.useSaturation = true, p.saturation = factor(saturation);
  if (hue > 0) p.useHue = true, p.hue = static_cast<float>(rng.uniform(-hue, hue));
  return p;
}

void applyColorJitter(Image& im, const JitterParams& p, std::array<uint8_t, 256>* deferred) {
  std::array<uint8_t, 256> map;
  std::iota(map.begin(), map.end(), 0);
  bool pending = false;
  auto compose = [&](const std::array<uint8_t, 256>& table) {
    for (auto& v : map) v = table[v];
    pending = true;
  };
  auto materialize = [&] {
    if (!pending) return;
    for (auto& v : im.pixels) v = map[v];
    std::iota(map.begin(), map.end(), 0);
    pending = false;
  };
  for (int op : p.order) {
    if (op == 0 && p.useBrightness) {
      compose(blendTable(0, p.brightness));
    } else if (op == 1 && p.useContrast) {
      const double mean = meanLuma(im, pending ? map.data() : nullptr);
      compose(blendTable(static_cast<int>(mean + 0.5), p.contrast));
    } else if (op == 2 && p.useSaturation) {
      adjustSaturation(im, p.saturation, pending ? map.data() : nullptr);
      std::iota(map.begin(), map.end(), 0);
      pending = false;
    } else if (op == 3 && p.useHue) {
      materialize();
      adjustHue(im, p.hue);
    }
  }
  if (deferred) {
    *deferred = map;
  } else {
    materialize();
  }
}

namespace {

// Pixels from encoded bytes (decoded lazily, possibly only a region) or from a decoded image.
struct EncodedSource {
  Decoder decoder;
  int width() const { return decoder.width(); }
  int height() const { return decoder.height(); }
  Image full() { return decoder.decode(); }
  // A view valid until the next call on this thread: the buffer is reused per thread (it is the
  // largest allocation of a train sample).
  ImageView region(const Rect& r, bool cropped) {
    thread_local Image buffer;
    if (cropped) return decoder.decodeRegionView(r, buffer);
    buffer = cropZeroFill(ImageView(decoder.decode()), r);
    return ImageView(buffer);
  }
};

struct DecodedSource {
  const Image& image;
  int width() const { return image.width; }
  int height() const { return image.height; }
  Image full() { return image; }
  // Regions (RandomResizedCrop boxes, resize source spans) lie inside the image: a view, no copy.
  ImageView region(const Rect& r, bool) const {
    FIXRES_CHECK(r.left >= 0 && r.top >= 0 && r.left + r.width <= image.width &&
                     r.top + r.height <= image.height,
                 InternalError, "transform: region outside the decoded image");
    return ImageView(image).sub(r.left, r.top, r.width, r.height);
  }
};

}  // namespace

Transform::Transform(TransformOptions options) : options_(options) {
  FIXRES_CHECK(options_.inputSize > 0 && options_.inputSize <= 8192, UsageError,
               "input size must be in [1, 8192], got ", options_.inputSize);
  for (int c = 0; c < 3; ++c) {
    FIXRES_CHECK(options_.std[c] != 0.0f, UsageError, "normalisation std must be non-zero, got ",
                 options_.std[c], " for channel ", c);
  }
  FIXRES_CHECK(options_.hue >= 0.0f && options_.hue <= 0.5f, UsageError,
               "hue jitter must be in [0, 0.5], got ", options_.hue);
  FIXRES_CHECK(options_.lightingStd >= 0.0f, UsageError, "lighting std must be >= 0, got ",
               options_.lightingStd);
  validate(AutoAugmentOptions{options_.autoAugment, options_.raMagnitude, options_.augmixSeverity});
  FIXRES_CHECK(options_.randomErase >= 0.0 && options_.randomErase <= 1.0, UsageError,
               "--random-erase must be a probability in [0, 1], got ", options_.randomErase);
  const bool trainKind = options_.kind == TransformKind::kTorch ||
                         options_.kind == TransformKind::kFull ||
                         options_.kind == TransformKind::kV2Train;
  FIXRES_CHECK(trainKind || options_.autoAugment == AutoAugmentKind::kNone, UsageError,
               "--auto-augment ", choiceName(autoAugmentKinds(), options_.autoAugment),
               " needs a train transform (torch, full or v2-train), got ",
               transformKindName(options_.kind));
  FIXRES_CHECK(trainKind || options_.randomErase == 0.0, UsageError, "--random-erase ",
               options_.randomErase, " needs a train transform (torch, full or v2-train), got ",
               transformKindName(options_.kind));
}

int Transform::outputSize() const {
  return options_.kind == TransformKind::kValNoCrop ? 0 : options_.inputSize;
}

bool Transform::isRandom() const {
  return options_.kind == TransformKind::kTorch || options_.kind == TransformKind::kFull ||
         options_.kind == TransformKind::kV2Train || options_.lightingStd > 0.0f;
}

template <typename Source>
TransformedImage Transform::run(Source& src, uint64_t seed) const {
  Rng rng(seed);
  const int s = options_.inputSize;
  const TransformKind kind = options_.kind;
  TransformedImage out;
  auto testResize = [&](int w, int h) {
    return options_.resizeMode == ResizeMode::kFixres
               ? fixresResizeSize(w, h, valResizeSize(s, options_.cropPct), false)
               : shorterSideResizeSize(w, h, valResizeSize(s, options_.cropPct));
  };
  switch (kind) {
    case TransformKind::kTorch:
    case TransformKind::kFull: {
      const Rect crop = sampleResizedCrop(src.width(), src.height(), rng);
      const ImageView region = src.region(crop, options_.croppedDecode);
      out.image = resize(region, s, s, options_.filter);
      out.flip = rng.uniform() < 0.5;
      if (kind == TransformKind::kFull) {
        applyColorJitter(out.image, sampleColorJitter(rng, 0.3f, 0.3f, 0.3f, options_.hue),
                         &out.valueMap);
        out.hasValueMap = true;
      }
      break;
    }
    case TransformKind::kVal:
    case TransformKind::kV2Test: {
      const int w = src.width(), h = src.height();
      const auto size = testResize(w, h);
      const Rect crop = centerCropRect(size[0], size[1], s, s);
      // Resize only the part of the resized image that the crop keeps (the rest is padding),
      // from only the source pixels that part reads (decoding just those, for JPEG).
      const int x0 = std::max(0, crop.left), x1 = std::min(size[0], crop.left + s);
      const int y0 = std::max(0, crop.top), y1 = std::min(size[1], crop.top + s);
      const Rect window{x0, y0, x1 - x0, y1 - y0};
      const Rect need = resizeSourceRect(w, h, size[0], size[1], window, options_.filter);
      const ImageView part = src.region(need, options_.croppedDecode);
      Image inner =
          resizeWindowPartial(part, need, w, h, size[0], size[1], window, options_.filter);
      if (x1 - x0 == s && y1 - y0 == s) {
        out.image = std::move(inner);
      } else {
        out.image = cropZeroFill(ImageView(inner), Rect{crop.left - x0, crop.top - y0, s, s});
      }
      break;
    }
    case TransformKind::kValNoCrop: {
      const Image full = src.full();
      const auto size = fixresResizeSize(full.width, full.height, s, true);
      out.image = resize(ImageView(full), size[0], size[1], options_.filter);
      break;
    }
    case TransformKind::kV2Train: {
      const Image full = src.full();
      const auto size = testResize(full.width, full.height);
      Image resized = resize(ImageView(full), size[0], size[1], options_.filter);
      if (rng.uniform() < 0.5) flipHorizontal(resized);
      applyColorJitter(resized, sampleColorJitter(rng, 0.05f, 0.05f, 0.05f, options_.hue));
      // FixRes transforms_v2 CenterCrop: vertical center, horizontal center moved by a uniform
      // integer in [0, j] to the left or right; PIL crop pads outside with black.
      const int top = roundHalfEven((resized.height - s) / 2.0);
      const int j = roundHalfEven((resized.width - s) / 2.0);
      const int jitter = j > 0 ? static_cast<int>(rng.randint(0, j)) : 0;
      const int left = rng.coin() ? j - jitter : j + jitter;
      out.image = cropZeroFill(ImageView(resized), Rect{left, top, s, s});
      break;
    }
  }
  if (options_.autoAugment != AutoAugmentKind::kNone) {
    // The policy sees the image as torchvision would: flipped and jittered (the deferred flip
    // and per-value map are applied first).
    if (out.flip) flipHorizontal(out.image);
    if (out.hasValueMap) {
      for (auto& v : out.image.pixels) v = out.valueMap[v];
    }
    out.flip = false;
    out.hasValueMap = false;
    const AutoAugmentOptions aa{options_.autoAugment, options_.raMagnitude,
                                options_.augmixSeverity};
    applyAugmentPlan(out.image, sampleAutoAugment(aa, out.image.width, out.image.height, rng));
  }
  if (options_.lightingStd > 0.0f)
    out.lightingAlpha = sampleLightingAlpha(options_.lightingStd, rng);
  if (options_.randomErase > 0.0)
    out.erase = sampleRandomErasing(out.image.height, out.image.width, options_.randomErase, rng);
  return out;
}

TransformedImage Transform::apply(const uint8_t* data, size_t size, const std::string& name,
                                  uint64_t seed) const {
  EncodedSource src{Decoder(data, size, name, DecodeOptions{options_.maxPixels})};
  return run(src, seed);
}

TransformedImage Transform::apply(const Image& decoded, uint64_t seed) const {
  DecodedSource src{decoded};
  return run(src, seed);
}

void Transform::writeFloat(const TransformedImage& t, float* out) const {
  if (options_.lightingStd <= 0.0f) {
    toNormalizedChw(ImageView(t.image), options_.mean, options_.std, t.flip, out,
                    t.hasValueMap ? t.valueMap.data() : nullptr);
    eraseChw(out, t.image.height, t.image.width, t.erase);
    return;
  }
  // Lighting works on [0, 1] values: to float, add the noise, then normalise.
  toNormalizedChw(ImageView(t.image), {0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}, t.flip, out,
                  t.hasValueMap ? t.valueMap.data() : nullptr);
  applyLighting(out, t.image.height, t.image.width, options_.lightingStd, t.lightingAlpha);
  const size_t plane = size_t(t.image.width) * t.image.height;
  for (int c = 0; c < 3; ++c) {
    float* p = out + c * plane;
    for (size_t i = 0; i < plane; ++i) p[i] = (p[i] - options_.mean[c]) / options_.std[c];
  }
  eraseChw(out, t.image.height, t.image.width, t.erase);
}

void Transform::writeUint8(const TransformedImage& t, uint8_t* out) const {
  // An erased box holds normalised zeros, which uint8 cannot represent: erasing runs go through
  // writeFloat (engine::loaderOptions asks for float outputs then).
  FIXRES_CHECK(!t.erase.apply, InternalError, "random erasing needs the float output");
  toChwUint8(ImageView(t.image), t.flip, out, t.hasValueMap ? t.valueMap.data() : nullptr);
}

}  // namespace fixres::image
