// Batches on the model's device, one step ahead on CUDA: while the current step runs on the
// compute stream, the next batch's copy from pinned memory (and its normalisation) runs on a side
// stream, and the compute stream waits for it only when the batch is taken, as the data
// prefetchers of the reference's training scripts do. On the CPU nothing is ahead: next() is
// Loader::next() then toModel(), so the loader's order and counts are the same either way.
#pragma once

#include <memory>
#include <optional>

#include "fixres/data/Loader.h"
#include "fixres/runtime/ModelInput.h"

namespace fixres::engine {

struct DeviceBatch {
  ModelBatch model;
  torch::Tensor indices;  // int64 N, dataset indices (on the CPU)
};

class DevicePrefetcher {
 public:
  // `loader` has started its epoch; it must outlive this prefetcher, and its transform must not
  // change while the prefetcher is in use (one prefetcher per epoch).
  DevicePrefetcher(data::Loader& loader, const RunDevice& run,
                   const image::TransformOptions& transform);
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  // The next batch, ready to use on the current stream; nullopt when the loader has no more.
  std::optional<DeviceBatch> next();

  // True when batches are copied ahead on a side stream (a CUDA device).
  bool overlapping() const;

 private:
  struct Ahead;  // the CUDA side stream, its event and the batch in flight
  data::Loader& loader_;
  RunDevice run_;
  image::TransformOptions transform_;
  std::unique_ptr<Ahead> ahead_;
};

}  // namespace fixres::engine
