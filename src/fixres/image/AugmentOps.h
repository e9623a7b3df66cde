// The per-image operations of torchvision 0.14's automatic augmentation policies, on RGB uint8
// images (HWC) as torchvision applies them to PIL images: the geometric ones are PIL's
// Image.transform(AFFINE) / Image.rotate with NEAREST resampling and black fill, the colour ones
// PIL's ImageEnhance (Brightness, Color, Contrast, Sharpness) and ImageOps (Posterize, Solarize,
// AutoContrast, Equalize, Invert). Each is bit-exact with PIL 9.4 (tests/unit/image/
// AugmentReferenceTest.cpp).
#pragma once

#include <array>

#include "fixres/image/Image.h"

namespace fixres::image {

// PIL's Image.transform(size, AFFINE, matrix, NEAREST, fillcolor=black): output pixel (x, y)
// reads the input at (a0 x + a1 y + a2, a3 x + a4 y + a5) taken at pixel centres (x + 0.5, ...),
// with PIL's fixed-point (16.16) or floating-point paths chosen as PIL chooses them.
Image affineNearest(const Image& src, const std::array<double, 6>& inverseMatrix);

// torchvision F.affine's inverse matrix for PIL (angle and shear in degrees, center in pixels).
std::array<double, 6> inverseAffineMatrix(double centerX, double centerY, double angle,
                                          double translateX, double translateY, double scale,
                                          double shearX, double shearY);

// torchvision's _apply_op geometry on PIL images (magnitudes as _apply_op receives them):
// ShearX/ShearY: F.affine with shear atan(m) in degrees about (0, 0); TranslateX/TranslateY:
// int(m) pixels; Rotate: PIL's Image.rotate(m) about the centre (90-degree turns of square images
// and 0 become transposes and copies, as in PIL).
Image shearX(const Image& src, double magnitude);
Image shearY(const Image& src, double magnitude);
Image translate(const Image& src, int dx, int dy);
Image rotate(const Image& src, double degrees);

// ImageEnhance.Sharpness(im).enhance(factor): blend of the image with ImageFilter.SMOOTH of it
// (3x3 kernel 1 1 1 / 1 5 1 / 1 1 1 over 13, float32, the border rows and columns unchanged).
void adjustSharpness(Image& im, float factor);
// ImageOps.posterize: keep the `bits` high bits (0 to 8).
void posterize(Image& im, int bits);
// ImageOps.solarize: values >= threshold become 255 - value.
void solarize(Image& im, double threshold);
// ImageOps.autocontrast (cutoff 0): each channel's [min, max] stretched to [0, 255].
void autocontrast(Image& im);
// ImageOps.equalize: each channel through PIL's cumulative-histogram table.
void equalize(Image& im);
// ImageOps.invert: 255 - value.
void invert(Image& im);

}  // namespace fixres::image
