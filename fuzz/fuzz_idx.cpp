// IDX (MNIST-format) images + labels from arbitrary bytes: the first byte splits the input into
// the two files. A dataset (whose samples are then fetched) or a DataError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/data/Dataset.h"

static std::string tempPath(const char* what) {
  std::string pattern = std::string("/tmp/fixres-fuzz-") + what + "-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  if (fd >= 0) ::close(fd);
  return pattern;
}

static void writeAll(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string images = tempPath("idx-images"), labels = tempPath("idx-labels");
  if (size < 1) return 0;
  size_t split = std::min<size_t>(size - 1, static_cast<size_t>(data[0]) * 4);
  writeAll(images, data + 1, split);
  writeAll(labels, data + 1 + split, size - 1 - split);
  try {
    auto ds = fixres::data::openIdx(images, labels);
    for (size_t i = 0; i < ds->size() && i < 4; ++i) (void)ds->fetch(i);
  } catch (const fixres::Error&) {
  }
  return 0;
}
