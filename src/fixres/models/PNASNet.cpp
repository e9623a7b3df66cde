// PNASNet-5-Large: the stem (conv_0, two stem cells), twelve cells in three stages with a
// reduction cell opening the second and third, the classifier head (see PNASNet.h).
#include "fixres/models/PNASNet.h"

#include <torch/torch.h>

#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

// timm's widths: (inLeft, outLeft, inRight, outRight, reduction, matchPrevLayerDims) of
// cell_stem_1 and cell_0 ... cell_11. A cell after a reduction sees a left input of twice the
// resolution of its right one and reduces it (matchPrevLayerDims).
struct PnasCellRow {
  int64_t inLeft, outLeft, inRight, outRight;
  bool reduction, matchPrev;
};
constexpr PnasCellRow kPnasCells[] = {
    {96, 108, 270, 108, true, true},       // cell_stem_1
    {270, 216, 540, 216, false, true},     // cell_0
    {540, 216, 1080, 216, false, false},   // cell_1
    {1080, 216, 1080, 216, false, false},  // cell_2
    {1080, 216, 1080, 216, false, false},  // cell_3
    {1080, 432, 1080, 432, true, false},   // cell_4
    {1080, 432, 2160, 432, false, true},   // cell_5
    {2160, 432, 2160, 432, false, false},  // cell_6
    {2160, 432, 2160, 432, false, false},  // cell_7
    {2160, 864, 2160, 864, true, false},   // cell_8
    {2160, 864, 4320, 864, false, true},   // cell_9
    {4320, 864, 4320, 864, false, false},  // cell_10
    {4320, 864, 4320, 864, false, false},  // cell_11
};

PNASNetCell pnasCell(const PnasCellRow& r) {
  PNASNetCellConfig c;
  c.inLeft = r.inLeft;
  c.outLeft = r.outLeft;
  c.inRight = r.inRight;
  c.outRight = r.outRight;
  c.reduction = r.reduction;
  c.matchPrevLayerDims = r.matchPrev;
  return PNASNetCell(c);
}

}  // namespace

PNASNetImpl::PNASNetImpl(const ModelOptions& o) {
  FIXRES_CHECK(o.numClasses > 0, UsageError, "number of classes must be positive, got ",
               o.numClasses);
  dropRate_ = o.dropRate >= 0 ? o.dropRate : 0.0;  // timm's PNASNet5Large: drop_rate=0
  FIXRES_CHECK(dropRate_ < 1, UsageError, "drop rate must be below 1, got ", dropRate_);

  conv_0 = register_module("conv_0", PNASNetConvBn(3, 96, 3, 2, /*preAct=*/false));
  PNASNetCellConfig stem;
  stem.inLeft = stem.inRight = 96;
  stem.outLeft = stem.outRight = 54;
  stem.stem = true;
  cell_stem_0 = register_module("cell_stem_0", PNASNetCell(stem));
  cell_stem_1 = register_module("cell_stem_1", pnasCell(kPnasCells[0]));
  for (int64_t i = 0; i < kNumCells; ++i)
    cells_.push_back(register_module("cell_" + std::to_string(i), pnasCell(kPnasCells[i + 1])));
  last_linear = register_module("last_linear", torch::nn::Linear(kEmbeddingDim, o.numClasses));
  // Initialisation: PyTorch's defaults, which LibTorch's modules share (timm's PNASNet5Large sets
  // none of its own).
}

PNASNetCell& PNASNetImpl::cell(int64_t i) {
  FIXRES_CHECK(i >= 0 && i < kNumCells, InternalError, "PNASNet has no cell ", i);
  return cells_[static_cast<size_t>(i)];
}

std::pair<torch::Tensor, torch::Tensor> PNASNetImpl::forwardWithEmbedding(torch::Tensor x) {
  FIXRES_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) >= 3 && x.size(3) >= 3, UsageError,
               "PNASNet input must be N x 3 x H x W with H, W >= 3, got ", x.sizes());
  torch::Tensor x0 = conv_0(x);
  // Each cell takes the outputs of the two cells before it (the stem cell: conv_0's alone).
  torch::Tensor prev = cell_stem_0(x0, x0);
  torch::Tensor cur = cell_stem_1(x0, prev);
  for (auto& c : cells_) {
    torch::Tensor next = c(prev, cur);
    prev = cur;
    cur = next;
  }
  torch::Tensor embedding = torch::relu(cur).mean({2, 3});
  torch::Tensor features = embedding;
  if (dropRate_ > 0 && is_training()) features = torch::dropout(embedding, dropRate_, true);
  return {last_linear(features), embedding};
}

bool PNASNetImpl::writeGraph(GraphWriter& w) {
  const std::string x0 = conv_0->writeGraph(w, w.input());
  std::string prev = cell_stem_0->writeGraph(w, x0, x0);
  std::string cur = cell_stem_1->writeGraph(w, x0, prev);
  for (auto& c : cells_) {
    std::string next = c->writeGraph(w, prev, cur);
    prev = cur;
    cur = next;
  }
  // Dropout: the identity in eval mode.
  w.output(w.linear(w.globalAveragePool(w.relu(cur)), *last_linear));
  return true;
}

}  // namespace fixres::models
