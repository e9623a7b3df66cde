// Evaluation and feature extraction over a dataset sharded exactly across the ranks (no padded
// duplicates), with metrics reduced as sums and counts so accuracy is exact.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Precision.h"
#include "fixres/image/Transform.h"
#include "fixres/models/ResNet.h"

namespace fixres::engine {

struct EvalOptions {
  image::TransformOptions transform;  // val at the test resolution by default
  int64_t batch = 64;
  int workers = 4;
  bool skipBadImages = false;
  bool testFlip = false;  // average the logits of the image and its mirror
  uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  bool channelsLast = false;  // inputs in channels-last (the model converted by the caller)
  Precision precision = Precision::kFp32;
  bool normalizeOnDevice = false;  // uint8 batches, normalised on `device` (fixed-size outputs)
  int64_t limit = -1;              // evaluate only the first `limit` images (smoke tests)
};

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;  // percent, percent, mean cross-entropy
  int64_t count = 0;
  int inputSize = 0;
  nlohmann::json toJson() const;
};

// Logits for a batch in eval mode of the given model, optionally with flip averaging.
torch::Tensor predictLogits(models::ResNet& model, const torch::Tensor& images, bool testFlip);

EvalResult evaluate(models::ResNet& model, std::shared_ptr<const data::Dataset> dataset,
                    const EvalOptions& options, distributed::Communicator& comm);

struct Extraction {
  torch::Tensor labels;      // int64 N (dataset order)
  torch::Tensor logits;      // float32 N x C
  torch::Tensor embeddings;  // float32 N x D
};

// Every rank computes its shard; rank 0 receives everything in dataset order (the other ranks
// get empty tensors).
Extraction extract(models::ResNet& model, std::shared_ptr<const data::Dataset> dataset,
                   const EvalOptions& options, distributed::Communicator& comm);

// Top-1/top-5 (percent) of logits or probabilities against labels.
std::pair<double, double> topkAccuracy(const torch::Tensor& scores, const torch::Tensor& labels);

}  // namespace fixres::engine
