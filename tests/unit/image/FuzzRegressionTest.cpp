// Inputs the fuzzers found crashing, kept as regression tests (fuzz/corpus/*/regression-*).
#include <gtest/gtest.h>

#include <filesystem>

#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"

namespace fixres::image {
namespace {

// A 16-bit grayscale 8x8 PNG whose image data is complete but whose IEND chunk is damaged: the
// decoder freed its row buffer twice. Pillow decodes it (it stops at the end of the image
// data); so must we, without a crash.
TEST(FuzzRegression, Gray16PngWithDamagedEndChunkDecodesLikePillow) {
  const std::string path =
      std::string(FIXRES_SOURCE_DIR) + "/fuzz/corpus/decode/regression-gray16-double-free.png";
  auto bytes = readFile(path);
  Image img = decodeImage(bytes.data(), bytes.size(), path);
  EXPECT_EQ(img.width, 8);
  EXPECT_EQ(img.height, 8);
  // Pillow's convert("RGB") of mode I clips at 255 and replicates the value into R, G and B;
  // the sum of its 192 values is 48531 for this file (Pillow 9.4).
  int64_t sum = 0;
  for (size_t i = 0; i + 2 < img.pixels.size(); i += 3) {
    EXPECT_EQ(img.pixels[i], img.pixels[i + 1]);
    EXPECT_EQ(img.pixels[i], img.pixels[i + 2]);
    sum += img.pixels[i] + img.pixels[i + 1] + img.pixels[i + 2];
  }
  EXPECT_EQ(sum, 48531);
}

// Every decoder finding: a decoded image or a DataError, never a crash.
TEST(FuzzRegression, DecoderFindingsEndCleanly) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FIXRES_SOURCE_DIR) / "fuzz" / "corpus" / "decode";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("regression-", 0) != 0) continue;
    ++seen;
    auto bytes = readFile(entry.path().string());
    try {
      Image img = decodeImage(bytes.data(), bytes.size(), name);
      EXPECT_EQ(img.pixels.size(), size_t(img.width) * img.height * 3) << name;
    } catch (const DataError&) {
    }
  }
  EXPECT_GE(seen, 1) << "no regression inputs in " << dir;
}

}  // namespace
}  // namespace fixres::image
