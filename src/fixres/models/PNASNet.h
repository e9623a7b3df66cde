// PNASNet-5-Large (Liu et al. 2018, "Progressive Neural Architecture Search") as timm's
// pnasnet5large, the port of the TensorFlow model FixRes fine-tunes: state-dict names conv_0.
// {conv, bn}, cell_stem_0, cell_stem_1, cell_0 ... cell_11, last_linear; TensorFlow "same"
// padding in the strided operations; BatchNorm eps 1e-3, momentum 0.1. 86,057,668 parameters
// with 1000 classes. Trained at 331 x 331; any input of at least 3 x 3 runs: the last feature
// map is ceil(floor((H - 1) / 2) / 16) pixels high (11 at 331), likewise wide.
#pragma once

#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "fixres/models/Model.h"
#include "fixres/models/PNASNetCells.h"

namespace fixres::models {

// The PNASNet family (PNASNetFamily.cpp): pnasnet5large, alias PNASNet; the reference's
// fine-tuning recipe.
const ArchitectureFamily& pnasnetFamily();

class PNASNetImpl : public ModelImpl {
 public:
  static constexpr int64_t kNumCells = 12;  // cell_0 ... cell_11 after the two stem cells
  static constexpr int64_t kEmbeddingDim = 4320;

  // options.dropRate < 0: timm's default for the class, no dropout; dropPathRate is unused
  // (the model has no stochastic depth).
  explicit PNASNetImpl(const ModelOptions& options);

  // The features after the last cell, ReLU, global average pooling (the embedding), dropout in
  // train mode, last_linear.
  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override;
  bool writeGraph(GraphWriter& writer) override;
  int64_t embeddingDim() const override { return kEmbeddingDim; }
  const ArchitectureFamily& family() const override { return pnasnetFamily(); }
  torch::nn::Linear& classifier() override { return last_linear; }
  std::string classifierPrefix() const override { return "last_linear."; }

  // cell_<i>, 0 <= i < kNumCells.
  PNASNetCell& cell(int64_t i);

  PNASNetConvBn conv_0{nullptr};
  PNASNetCell cell_stem_0{nullptr}, cell_stem_1{nullptr};
  torch::nn::Linear last_linear{nullptr};

 private:
  std::vector<PNASNetCell> cells_;
  double dropRate_ = 0;
};

}  // namespace fixres::models
