// Tar shards in the WebDataset layout: each sample is `<key>.jpg` (or .jpeg, .png) plus
// `<key>.cls`, the class index as decimal text, stored one after the other in POSIX ustar files
// `shard-000000.tar`, `shard-000001.tar`, ... . `writeShards` writes them (samples shuffled with
// a seed) with an index `shards.json` beside them; `openTarShards` reads a shard folder as a
// Dataset with random access (pread at the indexed offsets), from the index when it matches the
// files, else from one scan of the tar headers (so shards written by other tools read too).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"

namespace fixres::data {

// The index file written beside the shards.
inline constexpr const char* kShardIndexName = "shards.json";

// One sample of a shard: where its image lies in the file and its label.
struct ShardMember {
  std::string key;
  int64_t label = -1;     // the .cls value; -1 when the sample has none (or a bad one)
  uint64_t offset = 0;    // byte offset of the image data in the shard file
  uint64_t size = 0;      // image bytes
  std::string extension;  // "jpg", "jpeg" or "png" as named in the tar; "" without an image
  std::string problem;    // why the sample cannot be read ("" when it can): reported on fetch
};

struct ShardInfo {
  std::string name;    // file name inside the shard folder
  uint64_t bytes = 0;  // file size the index was made for
  std::vector<ShardMember> members;
};

// A shard folder's contents: class names (index order = label) and the shards in file-name order.
struct ShardIndex {
  std::vector<std::string> classes;
  std::vector<ShardInfo> shards;
};

// The members of one tar file, by one pass over its headers (data skipped; .cls read). Members
// group into samples by key (the member name up to the first '.' of its last path component, as
// WebDataset does); a sample without an image or without a valid .cls gets a `problem`; members of
// other types (.json, .txt, ...) are ignored. `labelled` false: a missing .cls is no problem
// (unlabelled images). DataError naming the file and offset for a corrupt or truncated archive.
ShardInfo scanShard(const std::string& path, bool labelled = true);

struct ShardWriteOptions {
  std::string outDir;                  // created if missing; must be empty if it exists
  uint64_t shardBytes = 256ull << 20;  // a shard is closed once it reaches this size
  uint64_t seed = 0;                   // sample order = torch.randperm(N) seeded with it
};

struct ShardWriteResult {
  size_t samples = 0;
  size_t shards = 0;
  int stopSignal = 0;  // a stop signal (SIGINT, SIGTERM, ...) ended the writing: nothing kept
};

// Writes `dataset`'s samples (encoded bytes, copied as they are, not decoded) in the order of
// torch.randperm(N) with a generator seeded `seed`, into shards of about `shardBytes` (each holds
// at least one sample), then the index. The files are written into a hidden folder inside outDir
// and moved up when all are done, the index last (so outDir never looks like a finished shard
// folder before it is one); on failure or a stop signal (installStopHandlers) nothing is kept and
// an outDir this call created is removed. Keys: the sample's path relative to the dataset's source
// without its extension, '.' replaced by '_' (WebDataset splits keys at the first dot); a key that
// would repeat one or not fit a ustar header is the sample's zero-padded index in the source.
// UsageError when outDir is not an empty folder; DataError for samples without encoded bytes.
ShardWriteResult writeShards(const Dataset& dataset, const ShardWriteOptions& options);

// A folder holding at least one `*.tar` file and no sub-folder.
bool isShardFolder(const std::string& dir);

// The shards of `dir` as one dataset: shard after shard in file-name order, each in tar order.
// Sample names are `<dir>/<shard>:<key>`; shardSizes() gives the samples per shard. The index
// is used when it lists exactly the folder's tar files with their sizes; otherwise (with a
// warning when there is one) the headers are scanned. Classes come from the index, else they are
// the class indices "0" ... max label. Samples without an image or a valid label (or with a label
// outside the classes) stay in the dataset and fail on fetch with a DataError naming shard and key,
// so the loader's bad-image policy decides. `labelled` false: labels are not needed (all 0).
std::shared_ptr<Dataset> openTarShards(const std::string& dir, bool labelled = true);

// The class names of a shard folder as its index gives them, when the index lists exactly the
// folder's tar files with their sizes; empty without such an index (unlabelled shards say
// nothing of the classes). DataError when `dir` holds no tar file.
std::vector<std::string> indexedShardClasses(const std::string& dir);

// The index as stored in shards.json, and back (DataError naming `what` for a malformed one).
std::string shardIndexToJson(const ShardIndex& index);
ShardIndex shardIndexFromJson(const std::string& text, const std::string& what);

}  // namespace fixres::data
