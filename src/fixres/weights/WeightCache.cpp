// Weight files fetched into the cache only when fixres can read them.
#include "fixres/weights/WeightCache.h"

#include "fixres/weights/WeightSource.h"

namespace fixres::models {

std::string fetchWeightFile(const RemoteFile& file, DownloadOptions options) {
  // Opening checks the container (zip directory, legacy pickles and storage sizes, safetensors
  // header and data extent), which is where a truncated or foreign body fails.
  options.checkFile = [](const std::string& path) { openWeightSource(path); };
  return fetchToCache(file, options);
}

}  // namespace fixres::models
