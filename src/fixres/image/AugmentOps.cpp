// PIL 9.4's arithmetic, re-derived from its documented behaviour and checked against it: affine
// nearest-neighbour sampling at pixel centres in 16.16 fixed point when the four corners fit
// (floating point otherwise, a per-row table for pure scale/translation), Image.rotate's matrix
// with cos/sin rounded to 15 decimals, ImageFilter.SMOOTH in float32 with +0.5 rounding, and the
// ImageOps lookup tables. No FMA may be contracted here: PIL's x86-64 build has none.
#include "fixres/image/AugmentOps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fixres::image {
namespace {

// CPython's math.radians / math.degrees factors.
constexpr double kPi = 3.14159265358979323846;
constexpr double kDegToRad = kPi / 180.0;
constexpr double kRadToDeg = 180.0 / kPi;

// PIL's COORD and FLOOR macros (Geometry.c).
inline int pilCoord(double v) {
  return v < 0.0 ? -1 : static_cast<int>(v);
}
inline int pilFloor(double v) {
  return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v);
}

bool fitsFixedPoint(const std::array<double, 6>& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
         std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

inline void copyPixel(uint8_t* out, const Image& src, int x, int y) {
  std::memcpy(out, src.row(y) + size_t(x) * 3, 3);
}

// Python's round(v, 15): the nearest 15-decimal value, correctly rounded both ways.
double roundTo15Decimals(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15f", v);
  return std::strtod(buf, nullptr);
}

void applyLut(Image& im, const uint8_t* lut0, const uint8_t* lut1, const uint8_t* lut2) {
  const size_t n = size_t(im.width) * im.height;
  uint8_t* p = im.pixels.data();
  for (size_t i = 0; i < n; ++i, p += 3) {
    p[0] = lut0[p[0]];
    p[1] = lut1[p[1]];
    p[2] = lut2[p[2]];
  }
}

void applyLut(Image& im, const uint8_t* lut) {
  for (auto& v : im.pixels) v = lut[v];
}

std::array<std::array<int64_t, 256>, 3> channelHistograms(const Image& im) {
  std::array<std::array<int64_t, 256>, 3> h{};
  const size_t n = size_t(im.width) * im.height;
  const uint8_t* p = im.pixels.data();
  for (size_t i = 0; i < n; ++i, p += 3) {
    ++h[0][p[0]];
    ++h[1][p[1]];
    ++h[2][p[2]];
  }
  return h;
}

// PIL's blend of an image with a per-pixel degenerate one (ImagingBlend).
inline uint8_t blendWithDegenerate(int degenerate, int value, float alpha, bool clip) {
  const float t = static_cast<float>(degenerate) + alpha * static_cast<float>(value - degenerate);
  if (!clip) return static_cast<uint8_t>(t);
  if (t <= 0.0f) return 0;
  if (t >= 255.0f) return 255;
  return static_cast<uint8_t>(t);
}

// ImageFilter.SMOOTH on an RGB image (ImagingFilter3x3): the border is copied.
Image smooth(const Image& im) {
  Image out = im;
  if (im.width < 3 || im.height < 3) return out;
  const float edge = static_cast<float>(1.0 / 13.0);
  const float centre = static_cast<float>(5.0 / 13.0);
  const int w = im.width;
  for (int y = 1; y < im.height - 1; ++y) {
    const uint8_t* above = im.row(y - 1);
    const uint8_t* mid = im.row(y);
    const uint8_t* below = im.row(y + 1);
    uint8_t* o = out.row(y);
    for (int x = 1; x < w - 1; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int i = x * 3 + c;
        float ss = 0.5f;
        ss += static_cast<float>(below[i - 3]) * edge + static_cast<float>(below[i]) * edge +
              static_cast<float>(below[i + 3]) * edge;
        ss += static_cast<float>(mid[i - 3]) * edge + static_cast<float>(mid[i]) * centre +
              static_cast<float>(mid[i + 3]) * edge;
        ss += static_cast<float>(above[i - 3]) * edge + static_cast<float>(above[i]) * edge +
              static_cast<float>(above[i + 3]) * edge;
        o[i] = ss <= 0.0f ? 0 : (ss >= 255.0f ? 255 : static_cast<uint8_t>(ss));
      }
    }
  }
  return out;
}

// PIL's transpose ROTATE_90 (quarter = 1, counter-clockwise) and ROTATE_270 (quarter = 3) of a
// square image, ROTATE_180 (quarter = 2) of any.
Image transposeQuarter(const Image& src, int quarter) {
  Image out(src.width, src.height, Uninitialized{});
  const int w = src.width, h = src.height;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int ox, oy;
      if (quarter == 1) {
        ox = y, oy = w - 1 - x;
      } else if (quarter == 3) {
        ox = h - 1 - y, oy = x;
      } else {
        ox = w - 1 - x, oy = h - 1 - y;
      }
      std::memcpy(out.row(oy) + size_t(ox) * 3, src.row(y) + size_t(x) * 3, 3);
    }
  }
  return out;
}

}  // namespace

Image affineNearest(const Image& src, const std::array<double, 6>& a) {
  Image out(src.width, src.height);  // black: the fill colour
  const int xsize = src.width, ysize = src.height;
  const int w = out.width, h = out.height;
  if (w == 0 || h == 0) return out;
  if (a[1] == 0 && a[3] == 0) {
    // Scale and translation: a table of source columns (ImagingScaleAffine).
    double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
    std::vector<int> xintab(static_cast<size_t>(w), 0);
    int xmin = w, xmax = 0;
    for (int x = 0; x < w; ++x) {
      const int xin = pilCoord(xo);
      if (xin >= 0 && xin < xsize) {
        xmax = x + 1;
        xmin = std::min(xmin, x);
        xintab[static_cast<size_t>(x)] = xin;
      }
      xo += a[0];
    }
    for (int y = 0; y < h; ++y) {
      const int yi = pilCoord(yo);
      if (yi >= 0 && yi < ysize) {
        uint8_t* o = out.row(y);
        for (int x = xmin; x < xmax; ++x)
          copyPixel(o + size_t(x) * 3, src, xintab[static_cast<size_t>(x)], yi);
      }
      yo += a[4];
    }
    return out;
  }
  if (fitsFixedPoint(a, 0, 0) && fitsFixedPoint(a, w, h) && fitsFixedPoint(a, 0, h) &&
      fitsFixedPoint(a, w, 0)) {
    auto fix = [](double v) { return static_cast<int64_t>(pilFloor(v * 65536.0 + 0.5)); };
    const int64_t a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
    int64_t a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
    int64_t a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int y = 0; y < h; ++y) {
      int64_t xx = a2, yy = a5;
      uint8_t* o = out.row(y);
      for (int x = 0; x < w; ++x, o += 3) {
        const int64_t xin = xx >> 16;  // arithmetic shift: floor, as PIL's int
        if (xin >= 0 && xin < xsize) {
          const int64_t yin = yy >> 16;
          if (yin >= 0 && yin < ysize)
            copyPixel(o, src, static_cast<int>(xin), static_cast<int>(yin));
        }
        xx += a0;
        yy += a3;
      }
      a2 += a1;
      a5 += a4;
    }
    return out;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < h; ++y) {
    double xx = xo, yy = yo;
    uint8_t* o = out.row(y);
    for (int x = 0; x < w; ++x, o += 3) {
      const int xin = pilCoord(xx);
      if (xin >= 0 && xin < xsize) {
        const int yin = pilCoord(yy);
        if (yin >= 0 && yin < ysize) copyPixel(o, src, xin, yin);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
  return out;
}

std::array<double, 6> inverseAffineMatrix(double cx, double cy, double angle, double tx, double ty,
                                          double scale, double shearX, double shearY) {
  const double rot = angle * kDegToRad;
  const double sx = shearX * kDegToRad;
  const double sy = shearY * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

Image shearX(const Image& src, double magnitude) {
  const double degrees = std::atan(magnitude) * kRadToDeg;
  return affineNearest(src, inverseAffineMatrix(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, degrees, 0.0));
}

Image shearY(const Image& src, double magnitude) {
  const double degrees = std::atan(magnitude) * kRadToDeg;
  return affineNearest(src, inverseAffineMatrix(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, degrees));
}

Image translate(const Image& src, int dx, int dy) {
  return affineNearest(
      src, inverseAffineMatrix(src.width * 0.5, src.height * 0.5, 0.0, dx, dy, 1.0, 0.0, 0.0));
}

Image rotate(const Image& src, double degrees) {
  // Python's angle % 360.0 (the sign of the divisor).
  double angle = std::fmod(degrees, 360.0);
  if (angle < 0) angle += 360.0;
  if (angle == 0.0) return src;
  if (angle == 180.0) return transposeQuarter(src, 2);
  if ((angle == 90.0 || angle == 270.0) && src.width == src.height)
    return transposeQuarter(src, angle == 90.0 ? 1 : 3);
  const double cx = src.width / 2.0, cy = src.height / 2.0;
  const double r = -(angle * kDegToRad);
  std::array<double, 6> m{roundTo15Decimals(std::cos(r)),  roundTo15Decimals(std::sin(r)), 0.0,
                          roundTo15Decimals(-std::sin(r)), roundTo15Decimals(std::cos(r)), 0.0};
  const double x = -cx, y = -cy;
  const double t2 = m[0] * x + m[1] * y + m[2];
  const double t5 = m[3] * x + m[4] * y + m[5];
  m[2] = t2 + cx;
  m[5] = t5 + cy;
  return affineNearest(src, m);
}

void adjustSharpness(Image& im, float factor) {
  const Image degenerate = smooth(im);
  const bool clip = !(factor >= 0.0f && factor <= 1.0f);
  const uint8_t* d = degenerate.pixels.data();
  for (size_t i = 0; i < im.pixels.size(); ++i)
    im.pixels[i] = blendWithDegenerate(d[i], im.pixels[i], factor, clip);
}

void posterize(Image& im, int bits) {
  const int mask = ~((1 << (8 - bits)) - 1);
  uint8_t lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i & mask);
  applyLut(im, lut);
}

void solarize(Image& im, double threshold) {
  uint8_t lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  applyLut(im, lut);
}

void autocontrast(Image& im) {
  const auto hist = channelHistograms(im);
  uint8_t luts[3][256];
  for (int c = 0; c < 3; ++c) {
    const auto& h = hist[c];
    int lo = 0, hi = 255;
    while (lo < 255 && h[lo] == 0) ++lo;
    while (hi > 0 && h[hi] == 0) --hi;
    for (int ix = 0; ix < 256; ++ix) {
      if (hi <= lo) {
        luts[c][ix] = static_cast<uint8_t>(ix);
        continue;
      }
      const double scale = 255.0 / (hi - lo);
      const double offset = static_cast<double>(-lo) * scale;
      const int v = static_cast<int>(ix * scale + offset);  // Python int(): toward zero
      luts[c][ix] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  applyLut(im, luts[0], luts[1], luts[2]);
}

void equalize(Image& im) {
  const auto hist = channelHistograms(im);
  uint8_t luts[3][256];
  for (int c = 0; c < 3; ++c) {
    const auto& h = hist[c];
    int64_t sum = 0, last = 0, used = 0;
    for (int i = 0; i < 256; ++i) {
      if (h[i] == 0) continue;
      sum += h[i];
      last = h[i];
      ++used;
    }
    const int64_t step = used <= 1 ? 0 : (sum - last) / 255;
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      if (step == 0) {
        luts[c][i] = static_cast<uint8_t>(i);
        continue;
      }
      luts[c][i] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
      n += h[i];
    }
  }
  applyLut(im, luts[0], luts[1], luts[2]);
}

void invert(Image& im) {
  uint8_t lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(255 - i);
  applyLut(im, lut);
}

}  // namespace fixres::image
