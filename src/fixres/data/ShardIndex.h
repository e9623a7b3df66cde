// What a shard folder holds, member by member (ShardIndex), and its index file shards.json:
// written as per-shard columns, read back by a SAX reader, used only when it matches the folder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// `s` in lower case, character by character (std::tolower): extensions match whatever their case.
std::string lowerCase(std::string s);
// The extensions (in lower case) of the images a shard holds: "jpg", "jpeg" and "png".
bool isImageExtension(const std::string& ext);

// The index as stored in shards.json, and back (DataError naming `what` for a malformed one).
std::string shardIndexToJson(const ShardIndex& index);
ShardIndex shardIndexFromJson(const std::string& text, const std::string& what);

// Reads the index of the shard folder `dir` into *index when it lists exactly `tars` (the
// folder's tar files, sorted) with their sizes. false without an index file, and false with the
// reason in *why when the index is malformed or does not match.
bool readMatchingShardIndex(const std::string& dir, const std::vector<std::string>& tars,
                            ShardIndex* index, std::string* why);

}  // namespace fixres::data
