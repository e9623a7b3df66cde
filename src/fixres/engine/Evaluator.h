// Evaluation and feature extraction over a dataset sharded exactly across the ranks (no padded
// duplicates), with metrics reduced as sums and counts so accuracy is exact.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "fixres/data/Dataset.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/image/Transform.h"
#include "fixres/models/Model.h"
#include "fixres/runtime/Metrics.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::engine {

// What eval, extract, sweep and the trainer's evaluations share (--batch, --workers,
// --test-flip, --skip-bad-images); the images' preprocessing is the model's (Preprocessing).
struct EvalSettings {
  int64_t batch = 64;
  int workers = 4;
  bool testFlip = false;  // average the logits of the image and its mirror
  bool skipBadImages = false;
};

struct EvalOptions {
  image::TransformOptions transform;  // val at the test resolution by default
  int64_t batch = 64;
  int workers = 4;
  bool skipBadImages = false;
  bool testFlip = false;
  uint64_t seed = 0;
  RunDevice run;       // the model is already on run.device, in run.numerics' memory format
  int64_t limit = -1;  // evaluate only the first `limit` images (smoke tests)
  // Stop at the next batch once a stop signal arrived (StopSignal.h): the result is then of the
  // images evaluated so far (complete = false). Every rank still reduces once: no rank waits.
  bool stopOnSignal = false;
  // The weights of an inference job (eval, predict, extract), as messages name them: its
  // non-finite logits are a WeightsError naming them (evaluate: at the first such batch;
  // extract: after the last). "" (a run's own evaluations): a loss of nan is reported instead.
  std::string modelSource;
};

// The val transform at `size` with the model's preprocessing record, and the settings.
EvalOptions evalOptions(const EvalSettings& settings, int size, const Preprocessing& preprocessing,
                        const RunDevice& run, uint64_t seed = 0);

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;  // percent, percent, mean cross-entropy
  int64_t count = 0;
  int inputSize = 0;
  bool complete = true;           // false: stopped by a signal before the last batch
  nlohmann::json toJson() const;  // with "complete": false only when stopped
};

// Logits for a batch in eval mode of the given model, optionally with flip averaging.
torch::Tensor predictLogits(models::Model& model, const torch::Tensor& images, bool testFlip);

EvalResult evaluate(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                    const EvalOptions& options, distributed::Communicator& comm);

struct Extraction {
  torch::Tensor indices;     // int64 N: the dataset indices, ascending (skipped images missing)
  torch::Tensor labels;      // int64 N (dataset order)
  torch::Tensor logits;      // float32 N x C
  torch::Tensor embeddings;  // float32 N x D (N x 0 without embeddings)
  bool complete = true;      // false: stopped by a signal (options.stopOnSignal)
};

// Every rank computes its shard; rank 0 receives everything in dataset order (the other ranks
// get empty tensors). Without `embeddings`, only the logits travel.
Extraction extract(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                   const EvalOptions& options, distributed::Communicator& comm,
                   bool embeddings = true);

}  // namespace fixres::engine
