// Samplers. Permutations come from LibTorch's own randperm with a CPU generator seeded like
// PyTorch's (seed + epoch), so the layouts equal the Python reference's, index for index.
#include "fixres/data/Sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/image/Rng.h"

namespace fixres::data {

Sampler::~Sampler() = default;

const ChoiceTable<SamplerKind>& samplerKinds() {
  static const ChoiceTable<SamplerKind> kTable = {"sampler",
                                                  {{"ra", SamplerKind::kRepeatedAug},
                                                   {"distributed", SamplerKind::kDistributed},
                                                   {"shard", SamplerKind::kShard}}};
  return kTable;
}

std::vector<int64_t> Sampler::streamPositions() const {
  std::vector<int64_t> positions(size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
  return positions;
}

namespace {

std::vector<int64_t> randperm(int64_t n, at::Generator& gen) {
  const torch::Tensor p = torch::randperm(n, gen, torch::TensorOptions().dtype(torch::kLong));
  const int64_t* d = p.data_ptr<int64_t>();
  return std::vector<int64_t>(d, d + n);
}

void checkRank(size_t datasetSize, int rank, int worldSize) {
  FIXRES_CHECK(worldSize >= 1, UsageError, "world size must be >= 1, got ", worldSize);
  FIXRES_CHECK(rank >= 0 && rank < worldSize, UsageError, "rank ", rank, " outside [0, world size ",
               worldSize, ")");
  FIXRES_CHECK(datasetSize > 0, DataError, "cannot sample from an empty dataset");
}

// Pads `stream` by repeating its head to `total` entries, then takes rank, rank + W, ... .
void strideWithPadding(const std::vector<int64_t>& stream, size_t total, int rank, int worldSize,
                       std::vector<int64_t>* indices, std::vector<int64_t>* positions) {
  indices->clear();
  positions->clear();
  for (size_t p = static_cast<size_t>(rank); p < total; p += static_cast<size_t>(worldSize)) {
    indices->push_back(stream[p % stream.size()]);
    positions->push_back(static_cast<int64_t>(p));
  }
}

// A sampler whose epoch is one global stream of indices, padded to total() entries by repeating
// its head, of which rank r takes r, r + W, ... .
class StridedSampler : public Sampler {
 public:
  StridedSampler(size_t n, int rank, int worldSize, uint64_t seed)
      : n_(n), rank_(rank), worldSize_(worldSize), seed_(seed) {
    checkRank(n, rank, worldSize);
  }
  void setEpoch(int64_t epoch) override { epoch_ = epoch; }
  size_t size() const override {
    const size_t w = static_cast<size_t>(worldSize_), r = static_cast<size_t>(rank_);
    const size_t t = total();
    return t / w + (r < t % w ? 1 : 0);
  }
  std::vector<int64_t> indices() const override { return strided().first; }
  std::vector<int64_t> streamPositions() const override { return strided().second; }

 protected:
  virtual std::vector<int64_t> stream() const = 0;  // the epoch's global stream
  virtual size_t total() const = 0;
  // PyTorch's generator for the epoch: seeded with seed + epoch.
  at::Generator epochGenerator() const {
    return at::detail::createCPUGenerator(seed_ + static_cast<uint64_t>(epoch_));
  }
  size_t n_;
  int rank_, worldSize_;

 private:
  std::pair<std::vector<int64_t>, std::vector<int64_t>> strided() const {
    std::pair<std::vector<int64_t>, std::vector<int64_t>> out;
    strideWithPadding(stream(), total(), rank_, worldSize_, &out.first, &out.second);
    return out;
  }
  uint64_t seed_;
  int64_t epoch_ = 0;
};

class DistributedSampler : public StridedSampler {
 public:
  DistributedSampler(size_t n, int rank, int worldSize, bool shuffle, uint64_t seed, bool pad)
      : StridedSampler(n, rank, worldSize, seed), shuffle_(shuffle), pad_(pad) {}

 private:
  std::vector<int64_t> stream() const override {
    if (shuffle_) {
      at::Generator gen = epochGenerator();
      return randperm(static_cast<int64_t>(n_), gen);
    }
    std::vector<int64_t> s(n_);
    for (size_t i = 0; i < n_; ++i) s[i] = static_cast<int64_t>(i);
    return s;
  }
  size_t total() const override {
    const size_t w = static_cast<size_t>(worldSize_);
    return pad_ ? (n_ + w - 1) / w * w : n_;
  }
  bool shuffle_, pad_;
};

class RepeatedAugSampler : public StridedSampler {
 public:
  RepeatedAugSampler(size_t n, int rank, int worldSize, uint64_t seed, int repetitions,
                     double lenFactor, bool referenceLength)
      : StridedSampler(n, rank, worldSize, seed), repetitions_(repetitions) {
    FIXRES_CHECK(repetitions >= 1, UsageError, "repetitions must be >= 1, got ", repetitions);
    FIXRES_CHECK(lenFactor > 0.0, UsageError, "length factor must be > 0, got ", lenFactor);
    length_ = static_cast<size_t>(static_cast<double>(n) * lenFactor);
    FIXRES_CHECK(length_ > 0, UsageError, "length factor ", lenFactor, " leaves no sample of ", n);
    const size_t w = static_cast<size_t>(worldSize_);
    total_ = (length_ + w - 1) / w * w;
    if (referenceLength) {
      // samplers.py: num_samples = ceil(N * repetitions / W), whatever len_factor is.
      total_ = (n * static_cast<size_t>(repetitions) + w - 1) / w * w;
    }
  }

 private:
  std::vector<int64_t> stream() const override {
    at::Generator gen = epochGenerator();
    std::vector<int64_t> stream;
    stream.reserve(length_);
    std::vector<int64_t> perm;
    size_t next = 0;
    while (stream.size() < length_) {
      if (next == perm.size()) {
        perm = randperm(static_cast<int64_t>(n_), gen);
        next = 0;
      }
      const int64_t index = perm[next++];
      for (int r = 0; r < repetitions_ && stream.size() < length_; ++r) stream.push_back(index);
    }
    return stream;
  }
  size_t total() const override { return total_; }
  int repetitions_;
  size_t length_ = 0, total_ = 0;
};

}  // namespace

std::shared_ptr<Sampler> makeDistributedSampler(size_t datasetSize, int rank, int worldSize,
                                                bool shuffle, uint64_t seed, bool padToEqual) {
  return std::make_shared<DistributedSampler>(datasetSize, rank, worldSize, shuffle, seed,
                                              padToEqual);
}

std::shared_ptr<Sampler> makeRepeatedAugSampler(size_t datasetSize, int rank, int worldSize,
                                                uint64_t seed, int repetitions, double lenFactor,
                                                bool referenceLength) {
  return std::make_shared<RepeatedAugSampler>(datasetSize, rank, worldSize, seed, repetitions,
                                              lenFactor, referenceLength);
}

namespace {

class ShardSampler : public Sampler {
 public:
  ShardSampler(std::vector<size_t> sizes, int rank, int worldSize, uint64_t seed, size_t buffer)
      : rank_(rank), worldSize_(worldSize), seed_(seed), buffer_(buffer) {
    size_t total = 0;
    for (size_t s : sizes) total += s;
    checkRank(total, rank, worldSize);
    FIXRES_CHECK(buffer >= 1, UsageError, "shuffle buffer must hold >= 1 sample, got ", buffer);
    size_t begin = 0;
    for (size_t s : sizes) {
      if (s > 0) shards_.push_back({begin, s});
      begin += s;
    }
  }
  void setEpoch(int64_t epoch) override {
    epoch_ = epoch;
    plan();
  }
  std::vector<int64_t> indices() const override { return indices_; }
  std::vector<int64_t> streamPositions() const override {
    std::vector<int64_t> p(indices_.size());
    for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<int64_t>(j) * worldSize_ + rank_;
    return p;
  }
  size_t size() const override { return indices_.size(); }

 private:
  struct Range {
    size_t begin, count;
  };
  void plan() {
    const size_t s = shards_.size(), w = static_cast<size_t>(worldSize_);
    at::Generator gen = at::detail::createCPUGenerator(seed_ + static_cast<uint64_t>(epoch_));
    const std::vector<int64_t> perm = randperm(static_cast<int64_t>(s), gen);
    const size_t padded = (s + w - 1) / w * w;
    std::vector<size_t> counts(w, 0);
    for (size_t p = 0; p < padded; ++p) counts[p % w] += shards_[perm[p % s]].count;
    const size_t length = *std::max_element(counts.begin(), counts.end());
    std::vector<int64_t> stream;
    stream.reserve(length);
    image::Rng rng(image::sampleSeed(seed_ ^ 0x5348415244ull, epoch_, rank_, -1));
    std::vector<int64_t> buffer;
    buffer.reserve(std::min(buffer_, length));
    for (size_t p = static_cast<size_t>(rank_); p < padded; p += w) {
      const Range& r = shards_[perm[p % s]];
      for (size_t i = r.begin; i < r.begin + r.count; ++i) {
        if (buffer.size() < buffer_) {
          buffer.push_back(static_cast<int64_t>(i));
          continue;
        }
        const auto k = static_cast<size_t>(rng.randint(0, static_cast<int64_t>(buffer.size()) - 1));
        stream.push_back(buffer[k]);
        buffer[k] = static_cast<int64_t>(i);
      }
    }
    while (!buffer.empty()) {
      const auto k = static_cast<size_t>(rng.randint(0, static_cast<int64_t>(buffer.size()) - 1));
      stream.push_back(buffer[k]);
      buffer[k] = buffer.back();
      buffer.pop_back();
    }
    const size_t own = stream.size();
    for (size_t j = own; j < length; ++j) stream.push_back(stream[(j - own) % own]);
    indices_ = std::move(stream);
  }
  std::vector<Range> shards_;
  int rank_, worldSize_;
  uint64_t seed_;
  size_t buffer_;
  int64_t epoch_ = 0;
  std::vector<int64_t> indices_;
};

}  // namespace

std::shared_ptr<Sampler> makeShardSampler(std::vector<size_t> shardSizes, int rank, int worldSize,
                                          uint64_t seed, size_t bufferSize) {
  auto sampler =
      std::make_shared<ShardSampler>(std::move(shardSizes), rank, worldSize, seed, bufferSize);
  sampler->setEpoch(0);
  return sampler;
}

}  // namespace fixres::data
