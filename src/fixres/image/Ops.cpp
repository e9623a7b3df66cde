// PIL and torchvision operation semantics. The colour adjustments replicate Pillow's
// ImagingBlend exactly: out = in1 + alpha * (in2 - in1) in float32, truncated, clipped only
// when alpha is outside [0, 1] (PIL's own two code paths).
#include "fixres/image/Ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fixres/image/Rng.h"
#include "fixres/image/Simd.h"

namespace fixres::image {
namespace {

inline uint8_t blendValue(int degenerate, int value, float alpha, bool clip) {
  const float t = static_cast<float>(degenerate) + alpha * static_cast<float>(value - degenerate);
  if (!clip) return static_cast<uint8_t>(t);
  if (t <= 0.0f) return 0;
  if (t >= 255.0f) return 255;
  return static_cast<uint8_t>(t);
}

// Blend with a constant degenerate image: a per-value lookup table.
void blendConstant(Image& im, int degenerate, float alpha) {
  const bool clip = !(alpha >= 0.0f && alpha <= 1.0f);
  uint8_t lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = blendValue(degenerate, v, alpha, clip);
  for (auto& p : im.pixels) p = lut[p];
}

}  // namespace

int roundHalfEven(double x) {
  return static_cast<int>(std::nearbyint(x));
}

Image cropZeroFill(const ImageView& src, const Rect& r) {
  Image out(r.width, r.height);
  const int x0 = std::max(0, r.left), x1 = std::min(src.width, r.left + r.width);
  const int y0 = std::max(0, r.top), y1 = std::min(src.height, r.top + r.height);
  if (x0 >= x1 || y0 >= y1) return out;
  for (int y = y0; y < y1; ++y) {
    std::memcpy(out.row(y - r.top) + size_t(x0 - r.left) * 3, src.row(y) + size_t(x0) * 3,
                size_t(x1 - x0) * 3);
  }
  return out;
}

Rect centerCropRect(int imageWidth, int imageHeight, int cropWidth, int cropHeight) {
  int padLeft = 0, padTop = 0, w = imageWidth, h = imageHeight;
  if (cropWidth > imageWidth || cropHeight > imageHeight) {
    padLeft = cropWidth > imageWidth ? (cropWidth - imageWidth) / 2 : 0;
    padTop = cropHeight > imageHeight ? (cropHeight - imageHeight) / 2 : 0;
    const int padRight = cropWidth > imageWidth ? (cropWidth - imageWidth + 1) / 2 : 0;
    const int padBottom = cropHeight > imageHeight ? (cropHeight - imageHeight + 1) / 2 : 0;
    w = imageWidth + padLeft + padRight;
    h = imageHeight + padTop + padBottom;
    if (w == cropWidth && h == cropHeight) return Rect{-padLeft, -padTop, cropWidth, cropHeight};
  }
  const int top = roundHalfEven((h - cropHeight) / 2.0);
  const int left = roundHalfEven((w - cropWidth) / 2.0);
  return Rect{left - padLeft, top - padTop, cropWidth, cropHeight};
}

void flipHorizontal(Image& im) {
  for (int y = 0; y < im.height; ++y) {
    uint8_t* row = im.row(y);
    for (int a = 0, b = im.width - 1; a < b; ++a, --b) {
      for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
    }
  }
}

void adjustBrightness(Image& im, float factor) {
  blendConstant(im, 0, factor);
}

std::array<uint8_t, 256> blendTable(int degenerate, float alpha) {
  const bool clip = !(alpha >= 0.0f && alpha <= 1.0f);
  std::array<uint8_t, 256> table;
  for (int v = 0; v < 256; ++v) table[v] = blendValue(degenerate, v, alpha, clip);
  return table;
}

namespace {
FIXRES_MULTIVERSION
uint64_t lumaSum(const uint8_t* p, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += static_cast<uint32_t>(p[3 * i] * 19595 + p[3 * i + 1] * 38470 + p[3 * i + 2] * 7471 +
                                 0x8000) >>
           16;
  }
  return sum;
}
}  // namespace

double meanLuma(const Image& im, const uint8_t* valueMap) {
  uint64_t sum = 0;
  const size_t n = size_t(im.width) * im.height;
  const uint8_t* p = im.pixels.data();
  if (valueMap) {
    for (size_t i = 0; i < n; ++i, p += 3) {
      const uint8_t q[3] = {valueMap[p[0]], valueMap[p[1]], valueMap[p[2]]};
      sum += luma(q);
    }
  } else {
    sum = lumaSum(p, n);
  }
  return n ? static_cast<double>(sum) / static_cast<double>(n) : 0.0;
}

void adjustContrast(Image& im, float factor) {
  // ImageStat mean of the L image, then int(mean + 0.5).
  blendConstant(im, static_cast<int>(meanLuma(im) + 0.5), factor);
}

namespace {
// PIL's blend of n pixels with their own L value, in two loops the compiler vectorises: the L
// values replicated per channel, then the float32 blend of every byte. Clamping then truncating
// equals PIL's two branches (no clip inside [0, 1], clip outside).
constexpr int kChunk = 64;
FIXRES_MULTIVERSION
void saturationChunk(uint8_t* p, int n, float factor, const uint8_t* valueMap) {
  uint8_t l[kChunk * 3];
  if (valueMap) {
    for (int j = 0; j < 3 * n; ++j) p[j] = valueMap[p[j]];
  }
  for (int i = 0; i < n; ++i) {
    const auto v = static_cast<uint8_t>(
        (p[3 * i] * 19595 + p[3 * i + 1] * 38470 + p[3 * i + 2] * 7471 + 0x8000) >> 16);
    l[3 * i] = l[3 * i + 1] = l[3 * i + 2] = v;
  }
  for (int j = 0; j < 3 * n; ++j) {
    float t = static_cast<float>(l[j]) + factor * static_cast<float>(int(p[j]) - int(l[j]));
    t = std::min(std::max(t, 0.0f), 255.0f);
    p[j] = static_cast<uint8_t>(static_cast<int>(t));
  }
}
}  // namespace

void adjustSaturation(Image& im, float factor, const uint8_t* valueMap) {
  const size_t n = size_t(im.width) * im.height;
  uint8_t* p = im.pixels.data();
  for (size_t i = 0; i < n; i += kChunk) {
    saturationChunk(p + 3 * i, static_cast<int>(std::min<size_t>(kChunk, n - i)), factor, valueMap);
  }
}

void adjustSaturation(Image& im, float factor) {
  adjustSaturation(im, factor, nullptr);
}

namespace {
inline uint8_t clip8(int v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Pillow's rgb2hsv_row (Convert.c), float/double mix kept as written there.
void rgbToHsv(const uint8_t* in, uint8_t* out) {
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b));
  const uint8_t minc = std::min(r, std::min(g, b));
  uint8_t uh = 0, us = 0;
  if (minc != maxc) {
    const float cr = static_cast<float>(maxc - minc);
    const float s = cr / static_cast<float>(maxc);
    const float rc = static_cast<float>(maxc - r) / cr;
    const float gc = static_cast<float>(maxc - g) / cr;
    const float bc = static_cast<float>(maxc - b) / cr;
    float h;
    if (r == maxc) {
      h = bc - gc;
    } else if (g == maxc) {
      h = static_cast<float>(2.0 + rc - bc);
    } else {
      h = static_cast<float>(4.0 + gc - rc);
    }
    h = static_cast<float>(std::fmod((h / 6.0 + 1.0), 1.0));
    uh = clip8(static_cast<int>(h * 255.0));
    us = clip8(static_cast<int>(s * 255.0));
  }
  out[0] = uh;
  out[1] = us;
  out[2] = maxc;
}

// Pillow's hsv2rgb (Convert.c).
void hsvToRgb(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = static_cast<int>(std::floor(static_cast<float>(h) * 6.0 / 255.0));
  const float f = static_cast<float>(static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i));
  const float fs = static_cast<float>(static_cast<float>(s) / 255.0);
  const uint8_t up = clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs))));
  const uint8_t uq = clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * f))));
  const uint8_t ut =
      clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * (1.0 - f)))));
  switch (i % 6) {
    case 0:
      out[0] = v;
      out[1] = ut;
      out[2] = up;
      break;
    case 1:
      out[0] = uq;
      out[1] = v;
      out[2] = up;
      break;
    case 2:
      out[0] = up;
      out[1] = v;
      out[2] = ut;
      break;
    case 3:
      out[0] = up;
      out[1] = uq;
      out[2] = v;
      break;
    case 4:
      out[0] = ut;
      out[1] = up;
      out[2] = v;
      break;
    default:
      out[0] = v;
      out[1] = up;
      out[2] = uq;
      break;
  }
}
}  // namespace

void adjustHue(Image& im, float factor) {
  // np.uint8(hue_factor * 255): float -> integer conversion, wrapped to 8 bits.
  const auto shift = static_cast<uint8_t>(static_cast<int64_t>(static_cast<double>(factor) * 255));
  const size_t n = size_t(im.width) * im.height;
  uint8_t* p = im.pixels.data();
  uint8_t hsv[3];
  for (size_t i = 0; i < n; ++i, p += 3) {
    rgbToHsv(p, hsv);
    hsv[0] = static_cast<uint8_t>(hsv[0] + shift);
    hsvToRgb(hsv, p);
  }
}

void toNormalizedChw(const ImageView& im, const std::array<float, 3>& mean,
                     const std::array<float, 3>& std, bool flip, float* out,
                     const uint8_t* valueMap) {
  float lut[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const int m = valueMap ? valueMap[v] : v;
      lut[c][v] = (static_cast<float>(m) / 255.0f - mean[c]) / std[c];
    }
  }
  const size_t plane = size_t(im.width) * im.height;
  float* o0 = out;
  float* o1 = out + plane;
  float* o2 = out + 2 * plane;
  for (int y = 0; y < im.height; ++y) {
    const uint8_t* row = im.row(y);
    const size_t base = size_t(y) * im.width;
    for (int x = 0; x < im.width; ++x) {
      const uint8_t* p = row + size_t(flip ? im.width - 1 - x : x) * 3;
      o0[base + x] = lut[0][p[0]];
      o1[base + x] = lut[1][p[1]];
      o2[base + x] = lut[2][p[2]];
    }
  }
}

void toChwUint8(const ImageView& im, bool flip, uint8_t* out, const uint8_t* valueMap) {
  uint8_t map[256];
  for (int v = 0; v < 256; ++v) map[v] = valueMap ? valueMap[v] : static_cast<uint8_t>(v);
  const size_t plane = size_t(im.width) * im.height;
  for (int y = 0; y < im.height; ++y) {
    const uint8_t* row = im.row(y);
    const size_t base = size_t(y) * im.width;
    for (int x = 0; x < im.width; ++x) {
      const uint8_t* p = row + size_t(flip ? im.width - 1 - x : x) * 3;
      out[base + x] = map[p[0]];
      out[plane + base + x] = map[p[1]];
      out[2 * plane + base + x] = map[p[2]];
    }
  }
}

std::array<float, 3> sampleLightingAlpha(float alphaStd, Rng& rng) {
  std::array<float, 3> alpha{0.0f, 0.0f, 0.0f};
  if (alphaStd == 0.0f) return alpha;
  for (float& a : alpha) a = static_cast<float>(rng.normal(0.0, alphaStd));
  return alpha;
}

std::array<float, 3> lightingOffset(const std::array<float, 3>& alpha) {
  static const float kEigVal[3] = {0.2175f, 0.0188f, 0.0045f};
  static const float kEigVec[3][3] = {
      {-0.5675f, 0.7192f, 0.4009f}, {-0.5808f, -0.0045f, -0.8140f}, {-0.5836f, -0.6948f, 0.4203f}};
  std::array<float, 3> out{};
  for (int c = 0; c < 3; ++c) {
    float rgb = 0.0f;
    for (int j = 0; j < 3; ++j) rgb += kEigVec[c][j] * alpha[j] * kEigVal[j];
    out[c] = rgb;
  }
  return out;
}

void applyLighting(float* chw, int height, int width, float alphaStd,
                   const std::array<float, 3>& alpha) {
  if (alphaStd == 0.0f) return;
  const auto offset = lightingOffset(alpha);
  const size_t plane = size_t(height) * width;
  for (int c = 0; c < 3; ++c) {
    const float rgb = offset[c];
    float* p = chw + c * plane;
    for (size_t i = 0; i < plane; ++i) p[i] = (p[i] + rgb) / (1.0f + alphaStd);
  }
}

}  // namespace fixres::image
