// Samplers: which dataset indices this rank reads in an epoch, and in which order.
// Both are pure functions of (seed, epoch, rank, world size), so the state to resume is the
// epoch (plus the loader's batch position).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fixres/common/Choice.h"

namespace fixres::data {

// ra: FixRes's repeated-augmentation sampler; distributed: torch's DistributedSampler; shard: the
// in-order sampler of tar shards (makeShardSampler), the one a reader that needs it says it
// requires (DatasetReader::requiredSampler).
enum class SamplerKind { kRepeatedAug, kDistributed, kShard };
const ChoiceTable<SamplerKind>& samplerKinds();  // ra, distributed, shard

class Sampler {
 public:
  virtual ~Sampler();
  virtual void setEpoch(int64_t epoch) = 0;
  // This rank's dataset indices for the current epoch, in order.
  virtual std::vector<int64_t> indices() const = 0;
  // For each entry of indices(): its position in the epoch's global stream (all ranks, before
  // striding). Distinguishes the copies of an index (repeated augmentation) for seeding; world
  // size independent.
  // Default: 0, 1, 2, ... (right for any sampler that never repeats an index in an epoch).
  virtual std::vector<int64_t> streamPositions() const;
  // Number of indices per epoch on this rank.
  virtual size_t size() const = 0;
};

// torch.utils.data.DistributedSampler: shuffle = torch.randperm(N) with a generator seeded by
// seed + epoch (the same permutation as PyTorch's), padToEqual: pad by repeating the head to a
// multiple of worldSize (drop_last=False); rank r takes positions r, r + W, ... . With
// padToEqual=false, no padding: exact shards whose sizes differ by at most one (evaluation).
std::shared_ptr<Sampler> makeDistributedSampler(size_t datasetSize, int rank, int worldSize,
                                                bool shuffle, uint64_t seed, bool padToEqual);

// FixRes RASampler: a stream of permutations (torch.randperm with a
// generator seeded by seed + epoch, a new permutation each time one is exhausted) in which each
// index appears `repetitions` times in a row; floor(lenFactor * N) entries, padded by repeating
// the head to a multiple of worldSize; rank r takes r, r + W, ... . Copies of an index land on
// different ranks when worldSize >= repetitions.
// referenceLength: the epoch length of FixRes's samplers.py instead: the stream of
// floor(lenFactor * N) entries is padded (head repeated) to ceil(N * repetitions / W) * W, i.e.
// 3N rather than 2N entries by default. Under the trainer's 5005 x 512 sample cap on ImageNet both
// give the same batches; on small datasets the reference's epochs are 1.5x longer.
std::shared_ptr<Sampler> makeRepeatedAugSampler(size_t datasetSize, int rank, int worldSize,
                                                uint64_t seed, int repetitions = 3,
                                                double lenFactor = 2.0,
                                                bool referenceLength = false);

// Training over tar shards (shardSizes: samples per shard, dataset indices numbered shard after
// shard), reading each shard front to back. Per epoch: the shard order is torch.randperm(S) seeded
// with seed + epoch, padded by repeating its head to a multiple of worldSize (as
// DistributedSampler pads indices); rank r takes shards r, r + W, ... and reads their samples in
// order through a shuffle buffer of `bufferSize` samples (WebDataset's: the first bufferSize fill
// it, then each new sample replaces a uniformly drawn one, which is emitted; at the end the rest
// leave in random order; the draws from the per-sample Rng seeded by (seed, epoch, rank)). Every
// rank takes the same number of samples: the largest count over the ranks, the shorter streams
// wrapping around to their own start (like DistributedSampler's padding), so no sample is dropped.
// Stream position of a rank's j-th sample: j * W + r (distinct for every entry of the epoch).
// Empty shards are left out. A pure function of (seed, epoch, rank, world size, shard sizes).
inline constexpr size_t kDefaultShuffleBuffer = 1000;
std::shared_ptr<Sampler> makeShardSampler(std::vector<size_t> shardSizes, int rank, int worldSize,
                                          uint64_t seed, size_t bufferSize = kDefaultShuffleBuffer);

}  // namespace fixres::data
