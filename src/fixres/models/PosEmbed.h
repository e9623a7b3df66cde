// Absolute position embeddings that follow the resolution: timm's resample_abs_pos_embed, the
// bicubic (antialiased) resampling of a ViT's learned embedding from one patch grid to another,
// the prefix tokens (class, register, distillation) kept apart.
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>

namespace fixres::models {

// posemb: 1 x (prefix + old[0] * old[1]) x D -> 1 x (prefix + grid[0] * grid[1]) x D, the first
// `prefixTokens` rows unchanged, the others as an old[0] x old[1] image of D channels resized
// bicubically (antialiased when shrinking; align_corners false) to grid[0] x grid[1], in float32
// and back to posemb's type. As timm, posemb comes back unchanged when the token count already
// fits a square grid.
torch::Tensor resampleAbsPosEmbed(const torch::Tensor& posemb, std::array<int64_t, 2> grid,
                                  std::array<int64_t, 2> old, int64_t prefixTokens);

// The square grid side of `patchTokens` tokens; -1 when it is not a square number.
int64_t squareGridSide(int64_t patchTokens);

}  // namespace fixres::models
