// Weight files by URL: the download cache (common/Download.h) with the check that keeps anything
// but a weight file fixres reads (WeightSource.h) out of it.
#pragma once

#include <string>

#include "fixres/common/Download.h"

namespace fixres::models {

// fetchToCache(file, options) with options.checkFile opening the file with openWeightSource: a
// download that is not a weight file fixres reads (an HTML page, an empty or truncated body) is
// refused before it enters the cache (WeightsError naming the URL and what the server sent), and
// a cached file that is not one is a WeightsError naming the URL and
// `fixres weights fetch --refresh`.
std::string fetchWeightFile(const RemoteFile& file, DownloadOptions options);

}  // namespace fixres::models
