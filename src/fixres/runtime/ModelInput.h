// The one path from the loader to the model, shared by the trainer, the evaluator and extract:
// loader options for a rank's device, and a batch moved to the device (non-blocking from pinned
// memory), uint8 images normalised there, channels-last when the numerics say so.
#pragma once

#include <torch/types.h>

#include "fixres/data/Loader.h"
#include "fixres/image/Transform.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::engine {

struct ModelBatch {
  torch::Tensor images;  // float32 N x 3 x H x W on the device (channels-last when asked)
  torch::Tensor labels;  // int64 N on the device
};

// Loader options of a rank: pinned memory on CUDA, uint8 batches when normalising on the
// device (fixed-size transforms only: val-nocrop batches stay float32).
data::LoaderOptions loaderOptions(const RunDevice& run, const image::TransformOptions& transform,
                                  int64_t batch, int workers, uint64_t seed, bool skipBadImages,
                                  bool dropLast);

ModelBatch toModel(const data::Batch& batch, const RunDevice& run,
                   const image::TransformOptions& transform);

// The float32 batch the loader would have produced, from a uint8 batch (on any device, e.g. the
// GPU after a 4x smaller copy): x / 255, plus the lighting offset and its scale when the
// transform has lighting, then (x - mean) / std. Fixed-size batches only (val-nocrop pads).
torch::Tensor normalizeOnDevice(const torch::Tensor& uint8Images, const torch::Tensor& lighting,
                                const image::TransformOptions& transform);

}  // namespace fixres::engine
