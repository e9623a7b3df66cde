// What a shard folder holds, member by member (ShardIndex), and its index file shards.json:
// written as per-shard columns, read back by a SAX reader, used only when it matches the folder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fixres::data {

// The index file written beside the shards.
inline constexpr const char* kShardIndexName = "shards.json";
// The largest index read: 1 GiB. An ImageNet index (1.28 M samples) takes about 60 bytes a sample,
// 80 MB; this allows some 17 million samples.
inline constexpr uint64_t kShardIndexMaxBytes = uint64_t(1) << 30;

// The largest class index a `.cls` member may hold: 999,999 (at most a million classes;
// ImageNet-21k has 21,841). Without an index the classes are "0" ... the largest label, so a larger
// one is a bad label of its sample, never that many class names.
inline constexpr int64_t kMaxShardLabel = 999999;

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

// The working folder `fixres shard` writes into inside --out, `.partial-` and mkdtemp's six
// characters (ShardWriter.h): never a class folder, never a reason not to read a folder as shards.
inline constexpr const char* kShardWorkPrefix = ".partial-";
bool isShardWorkFolderName(const std::string& name);

// `s` in lower case, character by character (std::tolower): extensions match whatever their case.
std::string lowerCase(std::string s);
// The extensions (in lower case) of the images a shard holds: those of ImageFolder (the codec
// registry's, image/Codec.h).
bool isImageExtension(const std::string& ext);

// The index as stored in shards.json, and back (DataError naming `what` for a malformed one).
std::string shardIndexToJson(const ShardIndex& index);
ShardIndex shardIndexFromJson(const std::string& text, const std::string& what);

// Reads the index of the shard folder `dir` into *index when it lists exactly `tars` (the
// folder's tar files, sorted) with their sizes. false without an index file, and false with the
// reason in *why when the index is malformed or does not match, is not a regular file (a FIFO is
// refused without blocking) or is larger than kShardIndexMaxBytes.
bool readMatchingShardIndex(const std::string& dir, const std::vector<std::string>& tars,
                            ShardIndex* index, std::string* why);

}  // namespace fixres::data
