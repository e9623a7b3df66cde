// The classifier networks fixres runs, behind one interface: ResNet family, EfficientNet,
// PNASNet. The engine sees only models::Model (forward, embedding, classifier, family); what is
// particular to an architecture (its names, preprocessing, fine-tuning recipe, other weight
// layouts) lives with it, in its family (Family.h).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fixres::models {

struct ArchitectureFamily;  // Family.h
class GraphWriter;          // GraphWriter.h

class ModelImpl : public torch::nn::Module {
 public:
  // x: N x 3 x H x W float (NCHW or channels-last) -> N x C logits.
  virtual torch::Tensor forward(torch::Tensor x) {
    return forwardWithEmbedding(std::move(x)).first;
  }
  // {logits N x C, pooled embedding N x D} (D = embeddingDim(); the classifier's input).
  virtual std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) = 0;
  virtual int64_t embeddingDim() const = 0;
  // The family that built it (Family.h): its recipe, layouts and names.
  virtual const ArchitectureFamily& family() const = 0;
  // The final linear layer and its state-dict prefix ("fc.", "classifier.", "last_linear.").
  virtual torch::nn::Linear& classifier() = 0;
  virtual std::string classifierPrefix() const = 0;
  // Describes the eval-mode graph to `writer` (GraphWriter.h) and returns true; false, writing
  // nothing, for a family that cannot describe itself yet.
  virtual bool writeGraph(GraphWriter& writer) { return false; }
  // The image size {height, width} its parameters are laid out for (a transformer's position
  // embedding), none when they fit any size; and its pooling in timm's words ("avg", "token").
  virtual std::optional<std::array<int64_t, 2>> layoutImageSize() const { return std::nullopt; }
  virtual std::string globalPool() const { return "avg"; }
};

using Model = std::shared_ptr<ModelImpl>;

// Construction options shared by every architecture.
struct ModelOptions {
  int64_t numClasses = 1000;
  // Dropout before the classifier and stochastic-depth rate (timm's drop_rate and
  // drop_path_rate), active in train mode only; < 0: the architecture's training default.
  double dropRate = -1;
  double dropPathRate = -1;
  // Vision transformers: the input height and width their position embedding is laid out for
  // ({0, 0}: the architecture's own size, 224 for vit_*_224), and whether inputs of another size
  // resample it per forward pass (timm's dynamic_img_size). Other families ignore both.
  std::array<int64_t, 2> imageSize{0, 0};
  bool dynamicImgSize = false;
};

}  // namespace fixres::models
