// timm's resample_abs_pos_embed (see PosEmbed.h).
#include "fixres/models/PosEmbed.h"

#include <ATen/ATen.h>
#include <ATen/ops/_upsample_bicubic2d_aa.h>

#include <cmath>

#include "fixres/common/Error.h"

namespace fixres::models {

int64_t squareGridSide(int64_t patchTokens) {
  if (patchTokens < 1) return -1;
  auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(patchTokens))));
  return side * side == patchTokens ? side : -1;
}

torch::Tensor resampleAbsPosEmbed(const torch::Tensor& posemb, std::array<int64_t, 2> grid,
                                  std::array<int64_t, 2> old, int64_t prefixTokens) {
  FIXRES_CHECK(posemb.dim() == 3 && posemb.size(0) == 1, InternalError,
               "a position embedding is 1 x tokens x D, got ", posemb.sizes());
  const int64_t tokens = posemb.size(1);
  FIXRES_CHECK(old[0] * old[1] + prefixTokens == tokens, InternalError, "a position embedding of ",
               tokens, " tokens is not ", prefixTokens, " + ", old[0], " x ", old[1]);
  // timm returns the embedding as it is when the token count fits and the new grid is square
  // (so an old non-square grid of the same count is kept, and a square one too).
  if (grid[0] * grid[1] + prefixTokens == tokens && grid[0] == grid[1]) return posemb;
  const int64_t dim = posemb.size(2);
  at::Tensor prefix = posemb.narrow(1, 0, prefixTokens);
  at::Tensor patches = posemb.narrow(1, prefixTokens, tokens - prefixTokens)
                           .to(at::kFloat)
                           .reshape({1, old[0], old[1], dim})
                           .permute({0, 3, 1, 2})
                           .contiguous();
  // F.interpolate(size=grid, mode="bicubic", antialias=True): align_corners false, no scales.
  at::Tensor resized = at::_upsample_bicubic2d_aa(patches, {grid[0], grid[1]},
                                                  /*align_corners=*/false, c10::optional<double>(),
                                                  c10::optional<double>());
  resized = resized.permute({0, 2, 3, 1}).reshape({1, grid[0] * grid[1], dim}).to(posemb.dtype());
  return prefixTokens > 0 ? at::cat({prefix, resized}, 1) : resized;
}

}  // namespace fixres::models
