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

// x86-64 builds carry an AVX2 clone of the hot loop, picked at load time (the baseline is SSE2,
// which has no 32-bit multiply); integer arithmetic keeps both versions bit-identical.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FIXRES_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define FIXRES_MULTIVERSION
#endif

// out[x] = clip8(sum_t k[t] * rows[t][x] + 1/2), rows[t] = first + t * stride, for x < n.
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

  // Horizontal pass into `tmp` (window.width columns, rows rowFirst..rowLast-1). Done on the
  // transposed source, so that each output column is a weighted sum of whole rows (vectorised),
  // then transposed back: same integers as Pillow's per-pixel loop.
  const int tmpRows = rowLast - rowFirst;
  // Scratch buffers kept per thread: fresh ones of varying sizes cost page faults per call.
  thread_local Image tmp;
  thread_local PixelBuffer t, tOut;
  thread_local std::vector<int32_t> acc;
  ImageView mid;
  if (needH) {
    Coeffs horiz = precomputeCoeffs(src.width, outWidth, filter, window.left, window.width);
    int colFirst = horiz.start[0], colLast = 0;
    for (int i = 0; i < window.width; ++i) {
      colFirst = std::min(colFirst, horiz.start[i]);
      colLast = std::max(colLast, horiz.start[i] + horiz.length[i]);
    }
    const int tRow = tmpRows * 3;  // bytes per transposed row
    t.resize(static_cast<size_t>(colLast - colFirst) * tRow);
    for (int y = 0; y < tmpRows; ++y) {
      const uint8_t* in = src.row(rowFirst + y) + static_cast<size_t>(colFirst) * 3;
      uint8_t* o = t.data() + static_cast<size_t>(y) * 3;
      for (int x = 0; x < colLast - colFirst; ++x, in += 3, o += tRow) {
        o[0] = in[0];
        o[1] = in[1];
        o[2] = in[2];
      }
    }
    tOut.resize(static_cast<size_t>(window.width) * tRow);
    if (acc.size() < static_cast<size_t>(tRow)) acc.resize(static_cast<size_t>(tRow));
    for (int xx = 0; xx < window.width; ++xx) {
      filterRows(tOut.data() + static_cast<size_t>(xx) * tRow,
                 t.data() + static_cast<size_t>(horiz.start[xx] - colFirst) * tRow,
                 static_cast<size_t>(tRow), &horiz.k[static_cast<size_t>(xx) * horiz.ksize],
                 horiz.length[xx], tRow, acc.data());
    }
    tmp.width = window.width;
    tmp.height = tmpRows;
    tmp.pixels.resize(static_cast<size_t>(window.width) * tmpRows * 3);
    for (int xx = 0; xx < window.width; ++xx) {
      const uint8_t* in = tOut.data() + static_cast<size_t>(xx) * tRow;
      uint8_t* o = tmp.pixels.data() + static_cast<size_t>(xx) * 3;
      const size_t step = static_cast<size_t>(window.width) * 3;
      for (int y = 0; y < tmpRows; ++y, in += 3, o += step) {
        o[0] = in[0];
        o[1] = in[1];
        o[2] = in[2];
      }
    }
    mid = ImageView(tmp);
  } else {
    mid = src.sub(window.left, rowFirst, window.width, tmpRows);
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

Image resize(const ImageView& src, int outWidth, int outHeight, Filter filter) {
  return resizeWindow(src, outWidth, outHeight, Rect{0, 0, outWidth, outHeight}, filter);
}

}  // namespace fixres::image
