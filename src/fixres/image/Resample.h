// PIL-exact antialiased resizing (Pillow's Resample.c, 8 bits per channel): separable filters
// whose support grows with the downscaling factor, 22-bit fixed-point coefficients, a horizontal
// pass then a vertical pass, rounding and clipping as PIL does. Bit-identical to
// PIL.Image.resize((w, h), BILINEAR or BICUBIC) on RGB images.
#pragma once

#include "fixres/image/Image.h"

namespace fixres::image {

enum class Filter { kBilinear, kBicubic };

// src resized to outWidth x outHeight (PIL: src.resize((outWidth, outHeight), filter)).
Image resize(const ImageView& src, int outWidth, int outHeight, Filter filter = Filter::kBilinear);

// Only the pixels of `window` (in output coordinates, inside outWidth x outHeight) of the same
// resize: identical values, computed without the rows and columns outside the window (a resize
// followed by a crop). The result is window.width x window.height.
Image resizeWindow(const ImageView& src, int outWidth, int outHeight, const Rect& window,
                   Filter filter = Filter::kBilinear);

// The rectangle of a srcWidth x srcHeight source that resizeWindow(..., window) reads.
Rect resizeSourceRect(int srcWidth, int srcHeight, int outWidth, int outHeight, const Rect& window,
                      Filter filter = Filter::kBilinear);

// resizeWindow on a srcWidth x srcHeight source of which only `region` is at hand (`part` holds
// its pixels; it must contain resizeSourceRect): identical values. Lets a decoder skip the rest.
Image resizeWindowPartial(const ImageView& part, const Rect& region, int srcWidth, int srcHeight,
                          int outWidth, int outHeight, const Rect& window,
                          Filter filter = Filter::kBilinear);

// The instruction sets the horizontal pass may use (the best the CPU has, up to this limit).
// For tests, which check every code path against PIL; all give identical results.
enum class ResampleIsa { kScalar = 0, kSse41 = 1, kAvx2 = 2 };
void limitResampleIsa(ResampleIsa isa);

}  // namespace fixres::image
