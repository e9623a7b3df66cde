// FixRes without labels: BatchNorm statistics re-estimated at a test resolution from unlabelled
// images (`fixres calibrate`). Every BatchNorm's running mean and variance are reset and
// recomputed as PyTorch does with momentum None (the cumulative average over the batches of the
// per-batch mean and unbiased variance), in forward passes without gradients; everything else of
// the model stays in eval mode (dropout and drop path off). The weights are not touched.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

struct CalibrationResult {
  int64_t images = 0;
  int64_t batches = 0;
  int64_t layers = 0;  // BatchNorm layers re-estimated
};

// Re-estimates the BatchNorm statistics of `model` from the batches `next` returns (float32
// N x 3 x H x W on the model's device, normalised as the model expects) until it returns an
// undefined tensor. The model is left in eval mode with each BatchNorm's momentum as it was.
// UsageError when the model has no BatchNorm; DataError when no batch came.
CalibrationResult calibrateBatchNorm(models::Model& model,
                                     const std::function<torch::Tensor()>& next);

struct CalibrateOptions {
  EvalOptions eval;        // the transform (val at the test resolution), batch, workers, device
  int64_t maxImages = -1;  // >= 1: a random subset of this many images (seeded); -1: every image
};

// calibrateBatchNorm over `dataset` (labels unused) through the loader, in one process. The
// subset (with maxImages) and the order are drawn from eval.seed.
CalibrationResult calibrate(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                            const CalibrateOptions& options);

}  // namespace fixres::engine
