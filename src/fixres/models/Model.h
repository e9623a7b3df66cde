// The classifier networks fixres runs, behind one interface: ResNet family, EfficientNet,
// PNASNet. The engine sees only models::Model (forward, embedding, classifier, family); what is
// particular to an architecture (its layout, fine-tuning recipe, weight-file names) lives with
// it.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fixres::models {

struct ArchitectureFamily;  // Family.h

class ModelImpl : public torch::nn::Module {
 public:
  // x: N x 3 x H x W float (NCHW or channels-last) -> N x C logits.
  virtual torch::Tensor forward(torch::Tensor x) {
    return forwardWithEmbedding(std::move(x)).first;
  }
  // {logits N x C, pooled embedding N x D} (D = embeddingDim(); the classifier's input).
  virtual std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) = 0;
  virtual int64_t embeddingDim() const = 0;
  // The family that built it (Family.h).
  virtual const ArchitectureFamily& family() const = 0;
  // The final linear layer and its state-dict prefix ("fc.", "classifier.", "last_linear.").
  virtual torch::nn::Linear& classifier() = 0;
  virtual std::string classifierPrefix() const = 0;
  // A weight file's key in another published layout of this architecture (torchvision's
  // EfficientNet names), renamed to this model's; other keys come back unchanged.
  virtual std::string canonicalKey(const std::string& key) const { return key; }
  // Whether `keys` (a file's state-dict keys) are in a foreign layout canonicalKey translates.
  virtual bool isForeignLayout(const std::vector<std::string>& keys) const { return false; }
  // Called when weights in the foreign layout load: numerics that layout's weights expect.
  virtual void adoptForeignLayout() {}
  // The other published layout's name for this model's `key` (the inverse of canonicalKey), or
  // "" when the architecture has no such layout.
  virtual std::string foreignKey(const std::string& key) const { return ""; }
};

using Model = std::shared_ptr<ModelImpl>;

// Construction options shared by every architecture.
struct ModelOptions {
  int64_t numClasses = 1000;
  // Dropout before the classifier and stochastic-depth rate (timm's drop_rate and
  // drop_path_rate), active in train mode only; < 0: the architecture's training default.
  double dropRate = -1;
  double dropPathRate = -1;
};

}  // namespace fixres::models
