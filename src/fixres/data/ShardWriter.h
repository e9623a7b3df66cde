// The shard writer: `writeShards` (behind `fixres shard`) writes a dataset's samples, shuffled
// with a seed, as tar shards `shard-000000.tar`, ... with their index shards.json.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fixres/common/Setting.h"
#include "fixres/data/Dataset.h"

namespace fixres::data {

struct ShardWriteOptions {
  std::string outDir;                  // created if missing; must be empty if it exists
  uint64_t shardBytes = 256ull << 20;  // a shard is closed once it reaches this size
  uint64_t seed = 0;                   // sample order = torch.randperm(N) seeded with it
};

// `fixres shard`'s request (--dataset-path, --out and --seed are shared rows the command binds).
struct ShardRequest {
  std::string datasetPath;
  std::string outDir;
  double shardMb = 256;  // --shard-size, in 10^6 bytes
  int64_t seed = 0;

  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    v(Setting{"", "--shard-size", "Shard",
              "Close a shard once it holds this many MB (10^6 bytes; fractions allowed); each "
              "holds at least one sample",
              Range::reals(0, 1e6, /*loOpen=*/true), SettingRole::kInvocation, "shard"},
      r.shardMb);
  }
  // The writer's options: the folder, the shard size in bytes (at least 1), the seed.
  ShardWriteOptions writeOptions() const {
    ShardWriteOptions w;
    w.outDir = outDir;
    w.shardBytes = std::max<uint64_t>(1, static_cast<uint64_t>(shardMb * 1e6));
    w.seed = static_cast<uint64_t>(seed);
    return w;
  }
};

struct ShardWriteResult {
  size_t samples = 0;
  size_t shards = 0;
  int stopSignal = 0;  // a stop signal (SIGINT, SIGTERM, ...) ended the writing: nothing kept
};

// Writes `dataset`'s samples (encoded bytes, copied as they are, not decoded) in the order of
// torch.randperm(N) with a generator seeded `seed`, into shards of about `shardBytes` (each holds
// at least one sample), then the index. The files are written into a hidden working folder inside
// outDir (`.partial-XXXXXX`, locked by a FolderLock while it is written) and moved up when all are
// done, the index last (so outDir never looks like a finished shard folder before it is one); on
// failure or a stop signal (installStopHandlers) nothing is kept and an outDir this call created is
// removed. A working folder left by a writer that was killed (its lock free) is removed first,
// with a warning. Keys: the sample's path relative to the dataset's source
// without its extension, '.' replaced by '_' (WebDataset splits keys at the first dot); a key that
// would repeat one or not fit a ustar header is the sample's zero-padded index in the source.
// UsageError when outDir is not an empty folder (naming its first entries) or a live writer's
// working folder is in it; DataError for samples without encoded bytes.
ShardWriteResult writeShards(const Dataset& dataset, const ShardWriteOptions& options);

}  // namespace fixres::data
