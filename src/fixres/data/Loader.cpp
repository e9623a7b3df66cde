// Loader internals. Workers claim sample positions in epoch order from one counter and write
// each transformed sample straight into its batch's tensor (one slot per batch in flight); the
// consumer takes slot (b mod prefetch) once all its samples are done. A worker never claims a
// sample of batch consumed + prefetch or later, which bounds memory and lets slots be reused.
#include "fixres/data/Loader.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"

namespace fixres::data {

// Batch buffers recycled between batches: a fresh 38 MB tensor per batch costs a page fault per
// 4 KiB page (glibc serves such sizes with mmap), more than the normalisation that fills it.
// Tensors return their buffer here when the consumer drops them; the pool outlives the loader
// as long as a tensor still holds a buffer.
class Loader::BufferPool {
 public:
  explicit BufferPool(size_t keep) : keep_(keep) {}
  ~BufferPool() {
    for (void* p : free_) std::free(p);
  }
  static torch::Tensor tensor(const std::shared_ptr<BufferPool>& pool, at::IntArrayRef sizes,
                              const torch::TensorOptions& options) {
    size_t bytes = options.dtype().itemsize();
    for (int64_t s : sizes) bytes *= static_cast<size_t>(s);
    void* p = pool->get(bytes);
    return torch::from_blob(
        p, sizes, [pool, bytes](void* q) { pool->put(q, bytes); }, options);
  }

 private:
  void* get(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (bytes == bytes_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void put(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (bytes != bytes_) {
        for (void* q : free_) std::free(q);
        free_.clear();
        bytes_ = bytes;
      }
      if (free_.size() < keep_) {
        free_.push_back(p);
        return;
      }
    }
    std::free(p);
  }
  std::mutex mutex_;
  std::vector<void*> free_;
  size_t bytes_ = 0;
  size_t keep_;
};

struct Loader::Slot {
  int64_t batch = -1;
  int64_t count = 0;  // samples in this batch
  int64_t done = 0;
  torch::Tensor images;                           // fixed-size outputs: count x 3 x S x S
  torch::Tensor lighting;                         // uint8 outputs: count x 3 lighting offsets
  std::vector<image::TransformedImage> variable;  // val-nocrop outputs, collated at the end
  std::vector<EncodedSample> encoded;             // encodedOutput: the samples
  std::vector<char> ok;                           // per sample: produced (not skipped)
  std::exception_ptr error;                       // fatal error of the lowest failing sample
  int64_t errorSample = INT64_MAX;
};

Loader::Loader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<Sampler> sampler,
               image::TransformOptions transform, LoaderOptions options)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      transform_(transform),
      options_(options) {
  FIXRES_CHECK(dataset_ != nullptr && sampler_ != nullptr, UsageError,
               "loader needs a dataset and a sampler");
  FIXRES_CHECK(options_.batchSize >= 1, UsageError, "batch size must be >= 1, got ",
               options_.batchSize);
  FIXRES_CHECK(options_.threads >= 0 && options_.threads <= 1024, UsageError,
               "loader threads must be in [0, 1024], got ", options_.threads);
  FIXRES_CHECK(options_.prefetchBatches >= 1, UsageError, "prefetch batches must be >= 1, got ",
               options_.prefetchBatches);
  if (options_.encodedOutput) {
    const std::string why = whyNoDevicePath(transform);
    FIXRES_CHECK(why.empty(), UsageError, "--decode-on gpu: ", why);
  }
  imageOptions_ =
      torch::TensorOptions().dtype(options_.uint8Output ? torch::kUInt8 : torch::kFloat32);
  if (options_.pinMemory && torch::cuda::is_available())
    imageOptions_ = imageOptions_.pinned_memory(true);
  for (int i = 0; i < options_.prefetchBatches; ++i) slots_.push_back(std::make_unique<Slot>());
  pool_ = std::make_shared<BufferPool>(static_cast<size_t>(options_.prefetchBatches) + 2);
}

Loader::~Loader() {
  stopWorkers();
}

void Loader::stopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  workCv_.notify_all();
  readyCv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Loader::setTransform(const image::TransformOptions& transform) {
  stopWorkers();
  epochStarted_ = false;
  transform_ = image::Transform(transform);
}

int64_t Loader::batchesPerEpoch() const {
  const int64_t n = static_cast<int64_t>(sampler_->size());
  return options_.dropLast ? n / options_.batchSize
                           : (n + options_.batchSize - 1) / options_.batchSize;
}

int64_t Loader::skippedImages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

void Loader::startEpoch(int64_t epoch, int64_t skipBatches) {
  stopWorkers();
  FIXRES_CHECK(skipBatches >= 0, UsageError, "skipBatches must be >= 0, got ", skipBatches);
  epoch_ = epoch;
  sampler_->setEpoch(epoch);
  indices_ = sampler_->indices();
  positions_ = sampler_->streamPositions();
  FIXRES_CHECK(positions_.size() == indices_.size(), InternalError,
               "sampler positions and indices differ in length");
  for (int64_t idx : indices_) {
    FIXRES_CHECK(idx >= 0 && static_cast<size_t>(idx) < dataset_->size(), InternalError,
                 "sampler index ", idx, " outside the dataset of ", dataset_->size());
  }
  const int64_t n = static_cast<int64_t>(indices_.size());
  numBatches_ = options_.dropLast ? n / options_.batchSize
                                  : (n + options_.batchSize - 1) / options_.batchSize;
  endSample_ = std::min(n, numBatches_ * options_.batchSize);
  nextBatch_ = std::min(skipBatches, numBatches_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = false;
    fatal_ = nullptr;
    skipped_ = 0;
    claim_ = nextBatch_ * options_.batchSize;
    consumed_ = nextBatch_;
    for (auto& s : slots_) *s = Slot();
  }
  epochStarted_ = true;
  if (options_.threads > 0) {
    for (int i = 0; i < options_.threads; ++i) workers_.emplace_back([this] { workerLoop(); });
  }
}

void Loader::initSlot(Slot& s, int64_t batch) {
  s = Slot();
  s.batch = batch;
  s.count = std::min(options_.batchSize, endSample_ - batch * options_.batchSize);
  s.ok.assign(static_cast<size_t>(s.count), 0);
  const int size = transform_.outputSize();
  if (options_.encodedOutput) {
    s.encoded.resize(static_cast<size_t>(s.count));
  } else if (size > 0) {
    s.images = imageOptions_.pinned_memory()
                   ? torch::empty({s.count, 3, size, size}, imageOptions_)
                   : BufferPool::tensor(pool_, {s.count, 3, size, size}, imageOptions_);
    if (options_.uint8Output) s.lighting = torch::zeros({s.count, 3}, torch::kFloat32);
  } else {
    s.variable.resize(static_cast<size_t>(s.count));
  }
}

void Loader::processSample(Slot& s, int64_t k) {
  const int64_t j = k - s.batch * options_.batchSize;  // position within the batch
  const int64_t index = indices_[static_cast<size_t>(k)];
  try {
    RawSample raw = dataset_->fetch(static_cast<size_t>(index));
    const uint64_t seed =
        image::sampleSeed(options_.seed, epoch_, index, positions_[static_cast<size_t>(k)]);
    if (options_.encodedOutput) {
      s.encoded[static_cast<size_t>(j)] = encodeSample(raw, transform_.options(), seed);
      s.ok[static_cast<size_t>(j)] = 1;
      return;
    }
    image::TransformedImage t = raw.isDecoded
                                    ? transform_.apply(raw.decoded, seed)
                                    : transform_.apply(raw.data(), raw.size(), raw.name, seed);
    if (s.images.defined()) {
      if (options_.uint8Output) {
        transform_.writeUint8(t, s.images[j].data_ptr<uint8_t>());
        if (transform_.options().lightingStd > 0.0f) {
          const auto offset = image::lightingOffset(t.lightingAlpha);
          float* dst = s.lighting.data_ptr<float>() + 3 * j;
          for (int c = 0; c < 3; ++c) dst[c] = offset[c];
        }
      } else {
        transform_.writeFloat(t, s.images[j].data_ptr<float>());
      }
    } else {
      s.variable[static_cast<size_t>(j)] = std::move(t);
    }
    s.ok[static_cast<size_t>(j)] = 1;
  } catch (const DataError& e) {
    if (options_.badImages == BadImagePolicy::kSkip) {
      // Once per file: repeated samples and later epochs are only counted (epoch-end line).
      log::warnOnce("data-skip:" + dataset_->name(static_cast<size_t>(index)),
                    "data: skipping unreadable image (reported once): ", oneLine(e.what()));
      std::lock_guard<std::mutex> lock(mutex_);
      ++skipped_;
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (j < s.errorSample) s.errorSample = j, s.error = std::current_exception();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (j < s.errorSample) s.errorSample = j, s.error = std::current_exception();
  }
}

void Loader::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  try {
    while (true) {
      workCv_.wait(lock, [&] {
        return stop_ || claim_ >= endSample_ ||
               claim_ / options_.batchSize < consumed_ + options_.prefetchBatches;
      });
      if (stop_ || claim_ >= endSample_) return;
      const int64_t k = claim_++;
      const int64_t b = k / options_.batchSize;
      Slot& s = *slots_[static_cast<size_t>(b % options_.prefetchBatches)];
      if (s.batch != b) initSlot(s, b);
      lock.unlock();
      processSample(s, k);
      lock.lock();
      if (++s.done == s.count) readyCv_.notify_all();
    }
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    if (!fatal_) fatal_ = std::current_exception();
    readyCv_.notify_all();
  }
}

std::optional<Batch> Loader::next() {
  FIXRES_CHECK(epochStarted_, UsageError, "Loader::next() before startEpoch()");
  while (nextBatch_ < numBatches_) {
    const int64_t b = nextBatch_++;
    Slot taken;
    if (options_.threads == 0) {
      initSlot(taken, b);
      for (int64_t k = b * options_.batchSize; k < b * options_.batchSize + taken.count; ++k) {
        processSample(taken, k);
      }
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      Slot& s = *slots_[static_cast<size_t>(b % options_.prefetchBatches)];
      readyCv_.wait(lock, [&] { return fatal_ || (s.batch == b && s.done == s.count); });
      if (fatal_) {
        std::exception_ptr e = fatal_;
        lock.unlock();
        stopWorkers();
        std::rethrow_exception(e);
      }
      taken = std::move(s);
      s = Slot();
      consumed_ = b + 1;
      lock.unlock();
      workCv_.notify_all();
    }
    if (taken.error) {
      stopWorkers();
      std::rethrow_exception(taken.error);
    }
    std::optional<Batch> batch = collate(taken);
    if (batch) return batch;  // else every image of the batch was skipped
  }
  if (skippedImages() > 0) {
    log::warn("data: epoch ", epoch_, ": skipped ", skippedImages(), " unreadable image(s)");
  }
  return std::nullopt;
}

std::optional<Batch> Loader::collate(Slot& s) {
  std::vector<int64_t> keep;
  for (int64_t j = 0; j < s.count; ++j) {
    if (s.ok[static_cast<size_t>(j)]) keep.push_back(j);
  }
  if (keep.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(keep.size());
  Batch out;
  out.labels = torch::empty({n}, torch::kInt64);
  out.indices = torch::empty({n}, torch::kInt64);
  int64_t* labels = out.labels.data_ptr<int64_t>();
  int64_t* indices = out.indices.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = s.batch * options_.batchSize + keep[static_cast<size_t>(i)];
    indices[i] = indices_[static_cast<size_t>(k)];
    labels[i] = dataset_->label(static_cast<size_t>(indices[i]));
  }
  if (options_.encodedOutput) {
    for (int64_t j : keep) out.encoded.push_back(std::move(s.encoded[static_cast<size_t>(j)]));
    return out;
  }
  if (s.images.defined()) {
    if (n == s.count) {
      out.images = s.images;
      out.lighting = s.lighting;
    } else {
      auto rows = torch::tensor(keep);
      out.images = s.images.index_select(0, rows);
      if (s.lighting.defined()) out.lighting = s.lighting.index_select(0, rows);
    }
    return out;
  }
  // Variable sizes (val-nocrop): pad to the largest height and width of the batch with zeros.
  int h = 0, w = 0;
  for (int64_t j : keep) {
    h = std::max(h, s.variable[static_cast<size_t>(j)].image.height);
    w = std::max(w, s.variable[static_cast<size_t>(j)].image.width);
  }
  out.images = torch::zeros({n, 3, h, w}, imageOptions_);
  for (int64_t i = 0; i < n; ++i) {
    const image::TransformedImage& t =
        s.variable[static_cast<size_t>(keep[static_cast<size_t>(i)])];
    const int th = t.image.height, tw = t.image.width;
    torch::Tensor one = torch::empty({3, th, tw}, imageOptions_.pinned_memory(false));
    if (options_.uint8Output) {
      transform_.writeUint8(t, one.data_ptr<uint8_t>());
    } else {
      transform_.writeFloat(t, one.data_ptr<float>());
    }
    out.images[i].narrow(1, 0, th).narrow(2, 0, tw).copy_(one);
  }
  return out;
}

}  // namespace fixres::data
