// Weight files by URL, on the cache side (no server: the transfers are tested end to end in
// tests/integration/download_test.sh): a cached copy is returned only when it is a weight file
// fixres reads; otherwise the error names the URL and the command that fetches it again.
#include "fixres/weights/WeightCache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/common/Sha256.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::models {
namespace {

// A server that nothing listens on: any request would fail, so a result comes from the cache.
constexpr const char* kUrl = "http://127.0.0.1:9/files/w.pth";

void writeCacheEntry(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(WeightCache, CachedWeightFilesAreUsedWithoutAnyRequest) {
  DownloadOptions o;
  o.cacheDir = testing::makeTempDir("fixres_weightcache_");
  const std::string cached = cachePathFor(o.cacheDir, kUrl);
  std::filesystem::create_directories(std::filesystem::path(cached).parent_path());
  saveStateDictFile(*createModel("resnet_tiny", 3), cached);
  EXPECT_EQ(fetchWeightFile(parseRemoteFile(kUrl), o), cached);
}

TEST(WeightCache, CachedFilesThatAreNotWeightsNameTheUrlAndTheRefresh) {
  DownloadOptions o;
  o.cacheDir = testing::makeTempDir("fixres_weightcache_");
  const std::string cached = cachePathFor(o.cacheDir, kUrl);
  for (const std::string& bytes :
       {std::string("<!DOCTYPE html><html><body>Sign in</body></html>\n"), std::string()}) {
    writeCacheEntry(cached, bytes);
    testing::expectWeightsError(
        [&] { fetchWeightFile(parseRemoteFile(kUrl), o); },
        {"the cached copy of " + std::string(kUrl) + " cannot be used", cached,
         "'fixres weights fetch --refresh " + std::string(kUrl) + "' downloads it again"});
  }
  // With its checksum, the refresh command keeps it.
  const std::string spec = std::string(kUrl) + "#sha256=" + sha256File(cached);
  testing::expectWeightsError([&] { fetchWeightFile(parseRemoteFile(spec), o); },
                              {"'fixres weights fetch --refresh " + spec + "'"});
}

}  // namespace
}  // namespace fixres::models
