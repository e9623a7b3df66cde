// The header scanner: one pass over a tar file's headers, its members grouped into WebDataset
// samples (scanShard), for shard folders without a matching index.
#pragma once

#include <string>

#include "fixres/data/ShardIndex.h"

namespace fixres::data {

// The members of one tar file, by one pass over its headers (data skipped; .cls read). Members
// group into samples by key (the member name up to the first '.' of its last path component, as
// WebDataset does); a sample without an image or without a valid .cls gets a `problem`; members of
// other types (.json, .txt, ...) are ignored. `labelled` false: a missing .cls is no problem
// (unlabelled images). DataError naming the file and offset for a corrupt or truncated archive.
ShardInfo scanShard(const std::string& path, bool labelled = true);

// Opens the tar file at `path` for reading, O_NONBLOCK (a FIFO in its place cannot block the
// open), and gives its descriptor. DataError "<path>: cannot open: <reason>".
int openShardFd(const std::string& path);

}  // namespace fixres::data
