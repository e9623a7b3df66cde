// Tar shards from arbitrary bytes: one file scanned as a shard (headers, PAX and GNU long names,
// .cls labels), then its samples read as a dataset. Members or a DataError naming the shard.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/data/TarScanner.h"
#include "fixres/data/TarShards.h"

static std::string tempDir() {
  std::string pattern = "/tmp/fixres-fuzz-tar-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return "/tmp";
  return pattern;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = tempDir();
  const std::string path = dir + "/shard-000000.tar";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    (void)fixres::data::scanShard(path);
    auto ds = fixres::data::openTarShards(dir);
    for (size_t i = 0; i < ds->size() && i < 8; ++i) {
      try {
        (void)ds->fetch(i);
      } catch (const fixres::DataError&) {
      }
    }
  } catch (const fixres::Error&) {
  }
  return 0;
}
