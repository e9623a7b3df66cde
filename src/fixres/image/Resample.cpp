// Pillow's two-pass resampler. Coefficients are computed in double precision exactly as
// Pillow's precompute_coeffs / normalize_coeffs_8bpc do, since one ulp there can flip a rounded
// output value; the passes themselves are integer arithmetic, so summation order is free.
#include "fixres/image/Resample.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/image/Simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace fixres::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinearFilter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

double bicubicFilter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Fixed-point taps of every output position in [first, first + count).
struct Coeffs {
  int ksize = 0;
  std::vector<int> start;   // first input index per output position
  std::vector<int> length;  // number of taps per output position
  std::vector<int32_t> k;   // count x ksize
};

Coeffs precomputeCoeffs(int inSize, int outSize, Filter filter, int first, int count) {
  double (*fn)(double) = filter == Filter::kBilinear ? bilinearFilter : bicubicFilter;
  const double baseSupport = filter == Filter::kBilinear ? 1.0 : 2.0;
  // Pillow: in0 = 0, in1 = inSize (float box); scale = (in1 - in0) / outSize.
  const float in0 = 0.0f, in1 = static_cast<float>(inSize);
  double filterscale = static_cast<double>(in1 - in0) / outSize;
  const double scale = filterscale;
  if (filterscale < 1.0) filterscale = 1.0;
  const double support = baseSupport * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.start.resize(count);
  c.length.resize(count);
  c.k.assign(static_cast<size_t>(count) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int i = 0; i < count; ++i) {
    const int xx = first + i;
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = fn((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    int32_t* k = &c.k[static_cast<size_t>(i) * c.ksize];
    for (int x = 0; x < xmax; ++x) {
      double v = ww != 0.0 ? w[x] / ww : w[x];
      k[x] = v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits))
                   : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    c.start[i] = xmin;
    c.length[i] = xmax;
  }
  return c;
}

inline uint8_t clipFixed8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Pillow's horizontal pass over `rows` rows starting at src row `rowFirst`: output pixel xx of a
// row = clipFixed8(sum_t k[xx][t] * in[start[xx] + t] + 1/2), per channel.
void horizontalScalar(const ImageView& src, int rowFirst, int rows, const Coeffs& h, int outWidth,
                      Image& out) {
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src.row(rowFirst + y);
    uint8_t* o = out.row(y);
    for (int xx = 0; xx < outWidth; ++xx, o += 3) {
      const int32_t* k = &h.k[static_cast<size_t>(xx) * h.ksize];
      const uint8_t* p = in + static_cast<size_t>(h.start[xx]) * 3;
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int x = 0; x < h.length[xx]; ++x, p += 3) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      o[0] = clipFixed8(s0);
      o[1] = clipFixed8(s1);
      o[2] = clipFixed8(s2);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same with the three channels of a pixel in one SSE4.1 register (a 4th lane of padding):
// one 32-bit multiply-add per tap instead of three. Integer arithmetic: identical results. The
// saturating packs clamp to [0, 255] exactly as clip8 does.
__attribute__((target("sse4.1"))) void horizontalSse41(const ImageView& src, int rowFirst, int rows,
                                                       const Coeffs& h, int outWidth, Image& out) {
  const __m128i half = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src.row(rowFirst + y);
    uint8_t* o = out.row(y);
    for (int xx = 0; xx < outWidth; ++xx, o += 3) {
      const int32_t* k = &h.k[static_cast<size_t>(xx) * h.ksize];
      const uint8_t* p = in + static_cast<size_t>(h.start[xx]) * 3;
      const int n = h.length[xx];
      // A 4-byte load reads one byte past the pixel: not for the last pixel of a row.
      const int safe = h.start[xx] + n >= src.width ? n - 1 : n;
      __m128i acc = half;
      int x = 0;
      for (; x < safe; ++x, p += 3) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        const __m128i px = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(v)));
        acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(k[x])));
      }
      if (x < n) {
        const uint32_t v = uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16);
        const __m128i px = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(v)));
        acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(k[x])));
      }
      acc = _mm_srai_epi32(acc, kPrecisionBits);
      const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(acc, acc), _mm_setzero_si128());
      const uint32_t rgb = static_cast<uint32_t>(_mm_cvtsi128_si32(packed));
      o[0] = static_cast<uint8_t>(rgb);
      o[1] = static_cast<uint8_t>(rgb >> 8);
      o[2] = static_cast<uint8_t>(rgb >> 16);
    }
  }
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// AVX2: two output pixels per register (lanes 0-3 and 4-7), over the longer of their two tap
// lists; the shorter one's extra coefficients are the zeros Coeffs pads with. Pixel pairs whose
// reads would pass the end of the row go through the one-pixel loop.
__attribute__((target("avx2"))) void horizontalAvx2(const ImageView& src, int rowFirst, int rows,
                                                    const Coeffs& h, int outWidth, Image& out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m128i half128 = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src.row(rowFirst + y);
    uint8_t* o = out.row(y);
    int xx = 0;
    for (; xx + 1 < outWidth; xx += 2, o += 6) {
      const int s0 = h.start[xx], s1 = h.start[xx + 1];
      const int n = std::max(h.length[xx], h.length[xx + 1]);
      if (std::max(s0, s1) + n >= src.width || n > h.ksize) break;
      const int32_t* k0 = &h.k[static_cast<size_t>(xx) * h.ksize];
      const int32_t* k1 = k0 + h.ksize;
      const uint8_t* p0 = in + static_cast<size_t>(s0) * 3;
      const uint8_t* p1 = in + static_cast<size_t>(s1) * 3;
      __m256i acc = half;
      for (int t = 0; t < n; ++t, p0 += 3, p1 += 3) {
        uint32_t v0, v1;
        std::memcpy(&v0, p0, 4);
        std::memcpy(&v1, p1, 4);
        const __m128i both = _mm_unpacklo_epi32(_mm_cvtsi32_si128(static_cast<int>(v0)),
                                                _mm_cvtsi32_si128(static_cast<int>(v1)));
        const __m256i px = _mm256_cvtepu8_epi32(both);
        const __m256i k = _mm256_set_m128i(_mm_set1_epi32(k1[t]), _mm_set1_epi32(k0[t]));
        acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(px, k));
      }
      acc = _mm256_srai_epi32(acc, kPrecisionBits);
      const __m256i packed =
          _mm256_packus_epi16(_mm256_packs_epi32(acc, acc), _mm256_setzero_si256());
      const auto a = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(packed)));
      const auto b = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(packed, 1)));
      o[0] = static_cast<uint8_t>(a);
      o[1] = static_cast<uint8_t>(a >> 8);
      o[2] = static_cast<uint8_t>(a >> 16);
      o[3] = static_cast<uint8_t>(b);
      o[4] = static_cast<uint8_t>(b >> 8);
      o[5] = static_cast<uint8_t>(b >> 16);
    }
    for (; xx < outWidth; ++xx, o += 3) {  // the tail: one pixel at a time, bounds-safe loads
      const int32_t* k = &h.k[static_cast<size_t>(xx) * h.ksize];
      const uint8_t* p = in + static_cast<size_t>(h.start[xx]) * 3;
      const int n = h.length[xx];
      __m128i acc = half128;
      for (int t = 0; t < n; ++t, p += 3) {
        const uint32_t v = uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16);
        const __m128i px = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(v)));
        acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(k[t])));
      }
      acc = _mm_srai_epi32(acc, kPrecisionBits);
      const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(acc, acc), _mm_setzero_si128());
      const auto rgb = static_cast<uint32_t>(_mm_cvtsi128_si32(packed));
      o[0] = static_cast<uint8_t>(rgb);
      o[1] = static_cast<uint8_t>(rgb >> 8);
      o[2] = static_cast<uint8_t>(rgb >> 16);
    }
  }
}
#endif

std::atomic<int> gIsaLimit{static_cast<int>(ResampleIsa::kAvx2)};

void horizontalPass(const ImageView& src, int rowFirst, int rows, const Coeffs& h, int outWidth,
                    Image& out) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool hasAvx2 = __builtin_cpu_supports("avx2");
  static const bool hasSse41 = __builtin_cpu_supports("sse4.1");
  const int limit = gIsaLimit.load(std::memory_order_relaxed);
  if (hasAvx2 && limit >= static_cast<int>(ResampleIsa::kAvx2)) {
    return horizontalAvx2(src, rowFirst, rows, h, outWidth, out);
  }
  if (hasSse41 && limit >= static_cast<int>(ResampleIsa::kSse41)) {
    return horizontalSse41(src, rowFirst, rows, h, outWidth, out);
  }
#endif
  horizontalScalar(src, rowFirst, rows, h, outWidth, out);
}

// out[x] = clipFixed8(sum_t k[t] * rows[t][x] + 1/2), rows[t] = first + t * stride, for x < n.
// The shape of Pillow's vertical pass; the horizontal pass uses it on transposed rows.
FIXRES_MULTIVERSION
void filterRows(uint8_t* out, const uint8_t* first, size_t stride, const int32_t* k, int taps,
                int n, int32_t* acc) {
  for (int x = 0; x < n; ++x) acc[x] = 1 << (kPrecisionBits - 1);
  for (int t = 0; t < taps; ++t) {
    const uint8_t* in = first + static_cast<size_t>(t) * stride;
    const int32_t w = k[t];
    for (int x = 0; x < n; ++x) acc[x] += in[x] * w;
  }
  for (int x = 0; x < n; ++x) {
    const int32_t v = acc[x] >> kPrecisionBits;
    out[x] = static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
  }
}

}  // namespace

namespace {

void checkResize(int srcWidth, int srcHeight, int outWidth, int outHeight, const Rect& window) {
  FIXRES_CHECK(srcWidth > 0 && srcHeight > 0 && outWidth > 0 && outHeight > 0, InternalError,
               "resize: bad sizes ", srcWidth, "x", srcHeight, " -> ", outWidth, "x", outHeight);
  FIXRES_CHECK(window.left >= 0 && window.top >= 0 && window.width > 0 && window.height > 0 &&
                   window.left + window.width <= outWidth &&
                   window.top + window.height <= outHeight,
               InternalError, "resize: window outside the output");
}

// The source interval [first, last) that output positions [w0, w0 + n) read along one axis.
void sourceSpan(int inSize, int outSize, Filter filter, int w0, int n, const Coeffs* c, int* first,
                int* last) {
  if (inSize == outSize) {  // not filtered
    *first = w0;
    *last = w0 + n;
    return;
  }
  *first = c->start[0];
  *last = 0;
  for (int i = 0; i < n; ++i) {
    *first = std::min(*first, c->start[i]);
    *last = std::max(*last, c->start[i] + c->length[i]);
  }
}

}  // namespace

void limitResampleIsa(ResampleIsa isa) {
  gIsaLimit.store(static_cast<int>(isa));
}

Rect resizeSourceRect(int srcWidth, int srcHeight, int outWidth, int outHeight, const Rect& window,
                      Filter filter) {
  checkResize(srcWidth, srcHeight, outWidth, outHeight, window);
  Coeffs h, v;
  if (outWidth != srcWidth)
    h = precomputeCoeffs(srcWidth, outWidth, filter, window.left, window.width);
  if (outHeight != srcHeight) {
    v = precomputeCoeffs(srcHeight, outHeight, filter, window.top, window.height);
  }
  int x0, x1, y0, y1;
  sourceSpan(srcWidth, outWidth, filter, window.left, window.width, &h, &x0, &x1);
  sourceSpan(srcHeight, outHeight, filter, window.top, window.height, &v, &y0, &y1);
  return Rect{x0, y0, x1 - x0, y1 - y0};
}

Image resizeWindowPartial(const ImageView& part, const Rect& region, int srcWidth, int srcHeight,
                          int outWidth, int outHeight, const Rect& window, Filter filter) {
  checkResize(srcWidth, srcHeight, outWidth, outHeight, window);
  FIXRES_CHECK(part.width == region.width && part.height == region.height, InternalError,
               "resize: part and region sizes differ");
  // Like Pillow, a dimension that keeps its size is not filtered at all.
  const bool needH = outWidth != srcWidth;
  const bool needV = outHeight != srcHeight;

  // Rows of the source the vertical pass reads (all of them when there is no vertical pass).
  Coeffs vert;
  if (needV) vert = precomputeCoeffs(srcHeight, outHeight, filter, window.top, window.height);
  int rowFirst, rowLast;
  sourceSpan(srcHeight, outHeight, filter, window.top, window.height, &vert, &rowFirst, &rowLast);
  FIXRES_CHECK(rowFirst >= region.top && rowLast <= region.top + region.height, InternalError,
               "resize: rows ", rowFirst, "..", rowLast, " outside the available part");

  // Horizontal pass into `tmp` (window.width columns, rows rowFirst..rowLast-1), kept per
  // thread: fresh buffers of varying sizes cost page faults at every call.
  const int tmpRows = rowLast - rowFirst;
  thread_local Image tmp;
  thread_local std::vector<int32_t> acc;
  ImageView mid;
  if (needH) {
    Coeffs horiz = precomputeCoeffs(srcWidth, outWidth, filter, window.left, window.width);
    for (int& s : horiz.start) {
      s -= region.left;  // relative to the part
      FIXRES_CHECK(s >= 0, InternalError, "resize: columns outside the available part");
    }
    for (int i = 0; i < window.width; ++i) {
      FIXRES_CHECK(horiz.start[i] + horiz.length[i] <= part.width, InternalError,
                   "resize: columns outside the available part");
    }
    tmp.width = window.width;
    tmp.height = tmpRows;
    tmp.pixels.resize(static_cast<size_t>(window.width) * tmpRows * 3);
    horizontalPass(part, rowFirst - region.top, tmpRows, horiz, window.width, tmp);
    mid = ImageView(tmp);
  } else {
    FIXRES_CHECK(
        window.left >= region.left && window.left + window.width <= region.left + part.width,
        InternalError, "resize: columns outside the available part");
    mid = part.sub(window.left - region.left, rowFirst - region.top, window.width, tmpRows);
  }

  Image out(window.width, window.height, Uninitialized{});
  if (!needV) {
    for (int y = 0; y < window.height; ++y) {
      std::copy_n(mid.row(y), static_cast<size_t>(window.width) * 3, out.row(y));
    }
    return out;
  }
  const int rowBytes = window.width * 3;
  if (acc.size() < static_cast<size_t>(rowBytes)) acc.resize(static_cast<size_t>(rowBytes));
  for (int yy = 0; yy < window.height; ++yy) {
    filterRows(out.row(yy), mid.row(vert.start[yy] - rowFirst), mid.stride,
               &vert.k[static_cast<size_t>(yy) * vert.ksize], vert.length[yy], rowBytes,
               acc.data());
  }
  return out;
}

Image resizeWindow(const ImageView& src, int outWidth, int outHeight, const Rect& window,
                   Filter filter) {
  return resizeWindowPartial(src, Rect{0, 0, src.width, src.height}, src.width, src.height,
                             outWidth, outHeight, window, filter);
}

Image resize(const ImageView& src, int outWidth, int outHeight, Filter filter) {
  return resizeWindow(src, outWidth, outHeight, Rect{0, 0, outWidth, outHeight}, filter);
}

}  // namespace fixres::image
