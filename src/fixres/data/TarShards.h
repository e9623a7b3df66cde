// Tar shards in the WebDataset layout: each sample is `<key>.jpg` (or another image format) plus
// `<key>.cls`, the class index as decimal text, stored one after the other in POSIX ustar files
// `shard-000000.tar`, `shard-000001.tar`, ... (written by writeShards, ShardWriter.h) with an
// index `shards.json` beside them (ShardIndex.h). `openTarShards` reads a shard folder as a
// Dataset with random access (pread at the indexed offsets), from the index when it matches the
// files, else from one scan of the tar headers (scanShard, TarScanner.h), so that shards written
// by other tools read too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"

namespace fixres::data {

// A folder holding at least one `*.tar` file and no sub-folder with images (.jpg, .png, .webp, at
// any depth): sub-folders without images (lost+found) and `fixres shard`'s working folders
// (`.partial-XXXXXX`) are ignored; a sub-folder with images makes it an image folder.
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

}  // namespace fixres::data
