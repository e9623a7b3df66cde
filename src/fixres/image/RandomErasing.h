// torchvision 0.14's RandomErasing(p, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0) on the
// normalised float CHW output, as the classification references apply it after Normalize.
#pragma once

#include "fixres/image/Image.h"

namespace fixres::image {

class Rng;

// The box F.erase fills: rows [top, top + height), columns [left, left + width); `apply` false
// when the coin said no or the 10 attempts found no box (torchvision then returns the input).
struct EraseBox {
  bool apply = false;
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// RandomErasing.forward's draws for a height x width image: the coin (probability p), then
// get_params: area fraction uniform in [0.02, 0.33], log-uniform aspect in [0.3, 3.3],
// h = round(sqrt(area * aspect)), w = round(sqrt(area / aspect)), kept when h < height and
// w < width, then top and left uniform.
EraseBox sampleRandomErasing(int height, int width, double p, Rng& rng);

// F.erase with value 0: zeroes the box in each of the 3 planes of a 3 x height x width buffer.
void eraseChw(float* chw, int height, int width, const EraseBox& box);

}  // namespace fixres::image
