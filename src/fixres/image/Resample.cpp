// Pillow's two-pass resampler. Coefficients are computed in double precision exactly as
// Pillow's precompute_coeffs / normalize_coeffs_8bpc do, since one ulp there can flip a rounded
// output value; the passes themselves are integer arithmetic, so summation order is free.
#include "fixres/image/Resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fixres/common/Error.h"

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

inline uint8_t clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

}  // namespace

Image resizeWindow(const ImageView& src, int outWidth, int outHeight, const Rect& window,
                   Filter filter) {
  FIXRES_CHECK(src.width > 0 && src.height > 0 && outWidth > 0 && outHeight > 0, InternalError,
               "resize: bad sizes ", src.width, "x", src.height, " -> ", outWidth, "x", outHeight);
  FIXRES_CHECK(window.left >= 0 && window.top >= 0 && window.width > 0 && window.height > 0 &&
                   window.left + window.width <= outWidth &&
                   window.top + window.height <= outHeight,
               InternalError, "resize: window outside the output");
  // Like Pillow, a dimension that keeps its size is not filtered at all.
  const bool needH = outWidth != src.width;
  const bool needV = outHeight != src.height;

  // Rows of the source the vertical pass reads (all of them when there is no vertical pass).
  Coeffs vert;
  int rowFirst = window.top, rowLast = window.top + window.height;
  if (needV) {
    vert = precomputeCoeffs(src.height, outHeight, filter, window.top, window.height);
    rowFirst = vert.start.front();
    rowLast = vert.start.back() + vert.length.back();
    for (int i = 0; i < window.height; ++i) {
      rowFirst = std::min(rowFirst, vert.start[i]);
      rowLast = std::max(rowLast, vert.start[i] + vert.length[i]);
    }
  }

  // Horizontal pass into `tmp` (window.width columns, rows rowFirst..rowLast-1).
  const int tmpRows = rowLast - rowFirst;
  Image tmp;
  ImageView mid;
  if (needH) {
    Coeffs horiz = precomputeCoeffs(src.width, outWidth, filter, window.left, window.width);
    tmp = Image(window.width, tmpRows);
    const int ksize = horiz.ksize;
    for (int y = 0; y < tmpRows; ++y) {
      const uint8_t* in = src.row(rowFirst + y);
      uint8_t* out = tmp.row(y);
      for (int xx = 0; xx < window.width; ++xx) {
        const int32_t* k = &horiz.k[static_cast<size_t>(xx) * ksize];
        const uint8_t* p = in + static_cast<size_t>(horiz.start[xx]) * 3;
        int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
        const int n = horiz.length[xx];
        for (int x = 0; x < n; ++x, p += 3) {
          s0 += p[0] * k[x];
          s1 += p[1] * k[x];
          s2 += p[2] * k[x];
        }
        out[xx * 3 + 0] = clip8(s0);
        out[xx * 3 + 1] = clip8(s1);
        out[xx * 3 + 2] = clip8(s2);
      }
    }
    mid = ImageView(tmp);
  } else {
    mid = src.sub(window.left, rowFirst, window.width, tmpRows);
  }

  if (!needV) {
    Image out(window.width, window.height);
    for (int y = 0; y < window.height; ++y) {
      std::copy_n(mid.row(y), static_cast<size_t>(window.width) * 3, out.row(y));
    }
    return out;
  }

  // Vertical pass: row-wise accumulation over the taps (vectorises well).
  Image out(window.width, window.height);
  const int rowBytes = window.width * 3;
  std::vector<int32_t> acc(rowBytes);
  for (int yy = 0; yy < window.height; ++yy) {
    const int32_t* k = &vert.k[static_cast<size_t>(yy) * vert.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const int n = vert.length[yy];
    for (int y = 0; y < n; ++y) {
      const uint8_t* in = mid.row(vert.start[yy] - rowFirst + y);
      const int32_t w = k[y];
      int32_t* a = acc.data();
      for (int x = 0; x < rowBytes; ++x) a[x] += in[x] * w;
    }
    uint8_t* o = out.row(yy);
    for (int x = 0; x < rowBytes; ++x) o[x] = clip8(acc[x]);
  }
  return out;
}

Image resize(const ImageView& src, int outWidth, int outHeight, Filter filter) {
  return resizeWindow(src, outWidth, outHeight, Rect{0, 0, outWidth, outHeight}, filter);
}

}  // namespace fixres::image
