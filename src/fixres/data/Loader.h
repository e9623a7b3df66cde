// The threaded data loader: worker threads fetch, decode and transform samples into batch
// tensors ahead of the consumer (a bounded number of batches), and batches come out in the
// sampler's order whatever the thread count. Every sample's random augmentation is seeded from
// (seed, epoch, dataset index, stream position), so outputs are identical for any thread count.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "fixres/data/Dataset.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/data/Sampler.h"
#include "fixres/image/Transform.h"

namespace fixres::data {

enum class BadImagePolicy {
  kFail,  // the batch holding the image rethrows its DataError (naming the file) from next()
  kSkip,  // the image is left out of its batch (smaller batch), counted; logged once per file
};

struct LoaderOptions {
  int64_t batchSize = 32;
  int threads = 4;          // worker threads; 0 = transform in the caller's thread inside next()
  int prefetchBatches = 4;  // batches prepared ahead of the consumer (>= 1)
  bool dropLast = false;    // drop the last incomplete batch
  uint64_t seed = 0;        // augmentation seed (combined with epoch, index and stream position)
  BadImagePolicy badImages = BadImagePolicy::kFail;
  bool pinMemory = false;    // page-locked batch memory when a CUDA LibTorch sees a GPU
  bool uint8Output = false;  // raw uint8 images (normalise on the GPU) instead of float32
  // --decode-on gpu: samples handed over undecoded with their transform's plan (Batch::encoded),
  // for decoding and transforming on the device. UsageError for a transform without a device
  // path (DeviceTransform.h).
  bool encodedOutput = false;
};

struct Batch {
  // N x 3 x H x W, float32 normalised (or uint8 when uint8Output), contiguous. val-nocrop
  // batches of different sizes are padded at the bottom and right with zeros.
  torch::Tensor images;
  torch::Tensor labels;   // int64 N
  torch::Tensor indices;  // int64 N, dataset indices
  // uint8 batches: float32 N x 3 per-sample lighting offsets ([0, 1] units, zero without
  // lighting), for engine::normalizeOnDevice.
  torch::Tensor lighting;
  std::vector<EncodedSample> encoded;  // encodedOutput: the samples (images undefined)
};

class Loader {
 public:
  Loader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<Sampler> sampler,
         image::TransformOptions transform, LoaderOptions options);
  ~Loader();  // stops and joins the workers, even mid-epoch
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // sampler->setEpoch(epoch) and starts producing; skipBatches resumes mid-epoch (the skipped
  // batches are not computed, later ones are identical to an uninterrupted epoch).
  void startEpoch(int64_t epoch, int64_t skipBatches = 0);
  // The next batch, or std::nullopt at the end of the epoch. Rethrows worker errors.
  std::optional<Batch> next();

  // Replaces the transform from the next startEpoch on (progressive resizing changes the output
  // size between epochs). Stops the workers of the current epoch.
  void setTransform(const image::TransformOptions& transform);

  int64_t batchesPerEpoch() const;
  int64_t skippedImages() const;  // images skipped (kSkip) so far in the current epoch

 private:
  struct Slot;
  class BufferPool;
  void stopWorkers();
  void workerLoop();
  void initSlot(Slot& slot, int64_t batch);
  void processSample(Slot& slot, int64_t sampleInEpoch);
  std::optional<Batch> collate(Slot& slot);

  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<Sampler> sampler_;
  image::Transform transform_;
  LoaderOptions options_;
  torch::TensorOptions imageOptions_;
  std::shared_ptr<BufferPool> pool_;

  // Epoch plan (read-only while workers run).
  int64_t epoch_ = 0;
  std::vector<int64_t> indices_;
  std::vector<int64_t> positions_;
  int64_t numBatches_ = 0;
  int64_t endSample_ = 0;  // samples of the epoch actually used (dropLast)

  // Shared with the workers, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable workCv_;
  std::condition_variable readyCv_;
  std::vector<std::unique_ptr<Slot>> slots_;
  int64_t claim_ = 0;     // next sample position to hand out
  int64_t consumed_ = 0;  // batches handed to the consumer
  bool stop_ = false;
  std::exception_ptr fatal_;  // an error outside any sample (allocation...)
  int64_t skipped_ = 0;
  std::vector<std::thread> workers_;

  int64_t nextBatch_ = 0;  // consumer side
  bool epochStarted_ = false;
};

}  // namespace fixres::data
