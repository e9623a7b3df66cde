// The sampler a training run reads its data with: the one the data's reader requires (tar shards
// are read in order by the shard sampler), else --sampler; and this rank's sampler of that kind.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "fixres/data/Dataset.h"
#include "fixres/data/DatasetReader.h"
#include "fixres/data/Sampler.h"

namespace fixres::engine {

// The sampler training on `trainPath` (read by `reader`) uses: the reader's required sampler,
// logged as "train: <reader> reads in order: sampler <kind> (not --sampler <requested>)", else
// `requested`. UsageError for --sampler shard on data its reader does not read in order.
data::SamplerKind trainingSampler(const data::DatasetReader& reader, data::SamplerKind requested,
                                  const std::string& trainPath);

// This rank's training sampler of `kind` over `dataset`: shard (the dataset's shards, through
// the default shuffle buffer; logged), ra (`repetitions` copies, length factor
// kRepeatedAugLenFactor) or distributed (shuffled, padded to equal ranks).
std::shared_ptr<data::Sampler> makeTrainingSampler(data::SamplerKind kind,
                                                   const data::Dataset& dataset, int rank,
                                                   int worldSize, uint64_t seed, int repetitions);

}  // namespace fixres::engine
