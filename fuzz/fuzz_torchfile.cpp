// torch.save archives (weights, checkpoints) from arbitrary bytes: a value or a WeightsError.
// The reader works on files, so each input is written to a private temporary file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/models/TorchFile.h"

static std::string tempPath() {
  static std::string path = [] {
    char name[] = "/tmp/fixres-fuzz-torchfile-XXXXXX";
    int fd = ::mkstemp(name);
    if (fd >= 0) ::close(fd);
    return std::string(name);
  }();
  return path;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tempPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    auto value = fixres::models::readTorchFile(path);
    (void)value;
  } catch (const fixres::Error&) {
  }
  return 0;
}
