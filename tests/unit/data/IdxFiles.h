// Test helper: small IDX (MNIST format) files, plain or gzipped.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace fixres::testing {

inline void writeIdx(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
}

// The four files `fixres import` reads, in `dir`: `train` and `test` images of 4 x 4 pixels with
// labels cycling through `classes`.
inline void writeIdxSource(const std::string& dir, int train, int test, int classes) {
  auto write = [&](const std::string& stem, int n) {
    std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4};
    std::vector<uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, 0};
    images[6] = labels[6] = static_cast<uint8_t>(n >> 8);
    images[7] = labels[7] = static_cast<uint8_t>(n & 0xff);
    for (int i = 0; i < n; ++i) {
      for (int p = 0; p < 16; ++p) images.push_back(static_cast<uint8_t>(i * 7 + p));
      labels.push_back(static_cast<uint8_t>(i % classes));
    }
    writeIdx(dir + "/" + stem + "-images-idx3-ubyte", images, false);
    writeIdx(dir + "/" + stem + "-labels-idx1-ubyte", labels, false);
  };
  write("train", train);
  write("t10k", test);
}

}  // namespace fixres::testing
