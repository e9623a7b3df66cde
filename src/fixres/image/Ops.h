// Image operations with PIL / torchvision 0.14 semantics, on RGB uint8 images (HWC):
// cropping with zero fill, torchvision's CenterCrop geometry, flips, PIL ImageEnhance colour
// adjustments (as torchvision's ColorJitter uses them), PIL's HSV hue shift, and the final
// conversion to a normalised float CHW buffer (ToTensor + Normalize, float32 arithmetic).
#pragma once

#include <array>
#include <cstdint>

#include "fixres/image/Image.h"

namespace fixres::image {

class Rng;

// PIL's Image.crop(box): `r` may extend beyond the image; those pixels are black.
Image cropZeroFill(const ImageView& src, const Rect& r);

// Where torchvision's CenterCrop((height, width)) reads from an image of size w x h, in the
// source's coordinates: padding (black) first when the crop is larger, then
// int(round((H - height) / 2)) with Python's round-half-even. May lie partly outside.
Rect centerCropRect(int imageWidth, int imageHeight, int cropWidth, int cropHeight);

// Python's round() (half to even) of x, as an int.
int roundHalfEven(double x);

void flipHorizontal(Image& im);

// PIL's ImageEnhance.Brightness / Contrast / Color(...).enhance(factor): Image.blend(degenerate,
// image, factor) with float32 arithmetic, truncation, and clipping when factor is outside [0, 1].
void adjustBrightness(Image& im, float factor);
void adjustContrast(Image& im, float factor);
void adjustSaturation(Image& im, float factor);
// torchvision's adjust_hue on PIL images: RGB -> PIL HSV, hue byte += uint8(factor * 255), back.
void adjustHue(Image& im, float factor);

// The building blocks of a fused ColorJitter (see applyColorJitter in Transform.h):
// the per-value table of PIL's blend with a constant degenerate value,
std::array<uint8_t, 256> blendTable(int degenerate, float alpha);
// ImageStat's mean of the L image, reading the pixels through `valueMap` when given,
double meanLuma(const Image& im, const uint8_t* valueMap = nullptr);
// and Color(...).enhance on the pixels read through `valueMap` (when given).
void adjustSaturation(Image& im, float factor, const uint8_t* valueMap);

// PIL's RGB -> L: (R*19595 + G*38470 + B*7471 + 0x8000) >> 16.
inline uint8_t luma(const uint8_t* p) {
  return static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

// Writes 3 x H x W float32 values (x / 255 - mean[c]) / std[c] (torchvision's ToTensor then
// Normalize, bit-exact), reading columns right to left when `flip`.
// `valueMap` (256 entries), when given, maps every value first (a deferred per-value operation).
void toNormalizedChw(const ImageView& im, const std::array<float, 3>& mean,
                     const std::array<float, 3>& std, bool flip, float* out,
                     const uint8_t* valueMap = nullptr);
// Writes 3 x H x W uint8 values (the same layout without normalisation).
void toChwUint8(const ImageView& im, bool flip, uint8_t* out, const uint8_t* valueMap = nullptr);

// AlexNet-style PCA colour noise (FixRes transforms_v2.Lighting) on 3 x H x W float values
// in [0, 1] (before normalisation): x += eigvec * (alpha * eigval), x /= 1 + alphaStd, with
// alpha ~ N(0, alphaStd) per channel (sampleLightingAlpha) and the ImageNet eigen decomposition.
std::array<float, 3> sampleLightingAlpha(float alphaStd, Rng& rng);
// The per-channel offset (in [0, 1] units) AlexNet lighting adds to every pixel for `alpha`:
// applyLighting computes (x + offset[c]) / (1 + alphaStd).
std::array<float, 3> lightingOffset(const std::array<float, 3>& alpha);
void applyLighting(float* chw, int height, int width, float alphaStd,
                   const std::array<float, 3>& alpha);

}  // namespace fixres::image
