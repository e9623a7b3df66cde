// The training sampler: chosen by the data's reader or --sampler, made for one rank.
#include "fixres/train/TrainingSampler.h"

#include <optional>

#include "fixres/common/Choice.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::engine {

data::SamplerKind trainingSampler(const data::DatasetReader& reader, data::SamplerKind requested,
                                  const std::string& trainPath) {
  const auto& kinds = data::samplerKinds();
  const std::optional<data::SamplerKind> required = reader.requiredSampler();
  if (!required) {
    FIXRES_CHECK(requested != data::SamplerKind::kShard, UsageError,
                 "--sampler shard reads tar shards, not ", trainPath, " (", reader.name(),
                 "): give --sampler ra or distributed");
    return requested;
  }
  log::info("train: ", reader.name(), " reads in order: sampler ", choiceName(kinds, *required),
            *required == requested ? "" : " (not --sampler " + choiceName(kinds, requested) + ")");
  return *required;
}

std::shared_ptr<data::Sampler> makeTrainingSampler(data::SamplerKind kind,
                                                   const data::Dataset& dataset, int rank,
                                                   int worldSize, uint64_t seed, int repetitions) {
  switch (kind) {
    case data::SamplerKind::kShard: {
      // Tar shards are read front to back, each rank its own shards (docs/data.md, "Tar shards").
      const auto shards = dataset.shardSizes();
      FIXRES_CHECK(!shards.empty(), InternalError, "the shard sampler on ", dataset.source(),
                   ", which has no shards");
      log::info("train: ", shards.size(),
                " tar shard(s), read in order through a shuffle buffer of ",
                data::kDefaultShuffleBuffer, " samples");
      return data::makeShardSampler(shards, rank, worldSize, seed);
    }
    case data::SamplerKind::kRepeatedAug:
      return data::makeRepeatedAugSampler(dataset.size(), rank, worldSize, seed, repetitions,
                                          kRepeatedAugLenFactor);
    case data::SamplerKind::kDistributed:
      break;
  }
  return data::makeDistributedSampler(dataset.size(), rank, worldSize, true, seed, true);
}

}  // namespace fixres::engine
