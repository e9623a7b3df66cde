// What the decoder does with hostile files beyond bad pixels: a header announcing a huge image
// is warned about once per file (PIL's DecompressionBombWarning) and refused above the hard
// limit; readFile refuses FIFOs, devices and folders instead of blocking or reading forever.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"

namespace fixres::image {
namespace {

// A baseline JPEG of 780 bytes whose frame header announces width x height: SOI, SOF0 (three
// components, 4:2:0), SOS, zero scan data, EOI. Enough for the header; no pixel decodes.
std::vector<uint8_t> jpegHeader(int width, int height) {
  std::vector<uint8_t> b = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08};
  for (int v : {height, width}) {
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v & 0xFF));
  }
  for (uint8_t v : {3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}) b.push_back(v);
  for (uint8_t v : {0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0x00, 0x3F, 0x00})
    b.push_back(v);
  b.resize(778, 0);
  b.push_back(0xFF);
  b.push_back(0xD9);
  return b;
}

int linesWith(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
  return n;
}

// Appends the `bytes` low bytes of `v`, least significant first.
void putLittleEndian(std::vector<uint8_t>& b, uint32_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) b.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

// A little-endian TIFF of one directory whose entries are (tag, type, value), each one value
// (types 3 SHORT and 4 LONG), followed by 64 bytes of zero samples (StripOffsets and
// TileOffsets point there).
std::vector<uint8_t> tiffWith(std::vector<std::array<uint32_t, 3>> entries) {
  std::sort(entries.begin(), entries.end());
  std::vector<uint8_t> b = {'I', 'I', 42, 0, 8, 0, 0, 0};
  auto put = [&b](uint32_t v, int bytes) { putLittleEndian(b, v, bytes); };
  const uint32_t data = 8 + 2 + 12 * uint32_t(entries.size()) + 4;
  put(uint32_t(entries.size()), 2);
  for (const auto& e : entries) {
    put(e[0], 2), put(e[1], 2), put(1, 4);
    const bool offset = e[0] == 273 || e[0] == 324;  // StripOffsets, TileOffsets
    put(offset ? data : e[2], 4);
  }
  put(0, 4);  // no next directory
  b.resize(b.size() + 64, 0);
  return b;
}

// A TIFF's working memory before RGB is bounded by its RGB size (8 times, plus 64 MiB), whatever
// it declares: a 1000x1000 image of 1000 samples per pixel (1 GB of samples) or 32768x32768
// tiles of a 64x64 image (3.2 GB) is a bad image, refused before anything is allocated (both
// took gigabytes before; 16-bit tiles of 65520x65520 ended the job out of memory).
TEST(ImageDecodeSafety, TiffSamplesAndTilesAreBoundedByTheImage) {
  const auto samples = tiffWith({{256, 4, 1000},
                                 {257, 4, 1000},
                                 {258, 3, 8},
                                 {259, 3, 1},
                                 {262, 3, 1},
                                 {273, 4, 0},
                                 {277, 3, 1000},
                                 {278, 4, 1000},
                                 {279, 4, 64}});
  const auto tiles = tiffWith({{256, 4, 64},
                               {257, 4, 64},
                               {258, 3, 8},
                               {259, 3, 1},
                               {262, 3, 2},
                               {277, 3, 3},
                               {322, 4, 32768},
                               {323, 4, 32768},
                               {324, 4, 0},
                               {325, 4, 64}});
  for (const auto& [file, what] : {std::make_pair(samples, std::string("1000 samples per pixel")),
                                   std::make_pair(tiles, std::string("tiles of 3221225472"))}) {
    try {
      decodeImage(file.data(), file.size(), "hostile.tif");
      ADD_FAILURE() << "decoded a TIFF declaring " << what;
    } catch (const DataError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("hostile.tif"), std::string::npos) << m;
      EXPECT_NE(m.find(what), std::string::npos) << m;
      EXPECT_NE(m.find("more than 8 times its RGB size"), std::string::npos) << m;
    }
  }
}

// The delta escape of a run-length encoded BMP skips (right + up * width) pixels, which keep
// palette index 0, as the BMP specification says (Pillow 9.4 reads two bytes too many there,
// so this case is not among image_formats.py's Pillow references).
TEST(ImageDecodeSafety, RleBmpDeltaSkipsPixelsAsSpecified) {
  const std::vector<uint8_t> rle = {0, 2, 1, 1, 3, 7, 0, 1};  // delta (1, 1); 3 x index 7; end
  std::vector<uint8_t> b = {'B', 'M'};
  auto put = [&b](uint32_t v, int bytes) { putLittleEndian(b, v, bytes); };
  const uint32_t offset = 14 + 40 + 8 * 4;
  put(offset + uint32_t(rle.size()), 4), put(0, 4), put(offset, 4);
  for (uint32_t v : {40u, 4u, 2u}) put(v, 4);  // header size, width, height (bottom-up)
  put(1, 2), put(8, 2), put(1, 4), put(uint32_t(rle.size()), 4);  // planes, bits, BI_RLE8
  for (uint32_t v : {0u, 0u, 8u, 0u}) put(v, 4);  // resolution, 8 colours, important
  for (uint32_t i = 0; i < 8; ++i) put(30 * i | 20 * i << 8 | 10 * i << 16, 4);  // BGRX
  b.insert(b.end(), rle.begin(), rle.end());
  const Image img = decodeImage(b.data(), b.size(), "delta.bmp");
  ASSERT_EQ(img.width, 4);
  ASSERT_EQ(img.height, 2);
  // Stored bottom-up: the delta leaves the bottom row and the top row's first pixel at index 0.
  const uint8_t seven[3] = {10 * 7, 20 * 7, 30 * 7};  // red, green, blue of entry 7
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(img.pixels[(size_t(y) * 4 + x) * 3 + c], y == 0 && x > 0 ? seven[c] : 0)
            << "pixel " << x << "," << y << " channel " << c;
}

TEST(ImageDecodeSafety, LargeImageHeaderWarnsOncePerFile) {
  const std::vector<uint8_t> big = jpegHeader(13000, 13000);
  const std::vector<uint8_t> small = jpegHeader(9459, 9459);  // 89,472,681: under PIL's limit
  ASSERT_EQ(big.size(), 780u);
  const std::string a = "/decode-safety/13000-a.jpg", b = "/decode-safety/13000-b.jpg";
  ::testing::internal::CaptureStderr();
  {
    Decoder first(big.data(), big.size(), a);
    EXPECT_EQ(first.width(), 13000);
    EXPECT_EQ(first.height(), 13000);
  }
  // Every epoch and loader thread opens the file again.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) Decoder(big.data(), big.size(), a);
    });
  }
  for (auto& t : threads) t.join();
  Decoder(big.data(), big.size(), b);
  Decoder(small.data(), small.size(), "/decode-safety/9459.jpg");
  Decoder(big.data(), big.size(), "/decode-safety/nolimit.jpg", DecodeOptions{0});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(linesWith(err, "warning: "), 2) << err;
  EXPECT_EQ(linesWith(err, a + ": image size 13000x13000 = 169000000 pixels exceeds 89478485 "
                               "pixels, could be a decompression bomb (refused above 178956970)"),
            1)
      << err;
  EXPECT_EQ(linesWith(err, b + ": image size"), 1) << err;
  // The hard limit stays: PIL refuses above twice its warning limit, before any pixel buffer.
  const std::vector<uint8_t> bomb = jpegHeader(13380, 13380);  // 179,024,400 pixels
  try {
    Decoder d(bomb.data(), bomb.size(), "/decode-safety/13380.jpg");
    ADD_FAILURE() << "a 13380x13380 header accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of 178956970"), std::string::npos)
        << e.what();
  }
}

// Opening a FIFO for reading waits for a writer: a FIFO named like an image hung eval forever.
TEST(ImageDecodeSafety, ReadFileRefusesFifosDevicesAndFolders) {
  const std::string dir = fixres::testing::makeTempDir("fixres_special_files_");
  const std::string fifo = dir + "/x.jpg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::future<std::string> result = std::async(std::launch::async, [fifo] {
    try {
      readFile(fifo);
      return std::string("read");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
  });
  if (result.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "readFile blocked on a FIFO";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets it go
    if (fd >= 0) ::close(fd);
  }
  const std::string message = result.get();
  EXPECT_NE(message.find(fifo + ": not a regular file"), std::string::npos) << message;
  for (const std::string path : {std::string("/dev/zero"), dir}) {
    try {
      readFile(path);
      ADD_FAILURE() << path << " read";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": not a regular file"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(readFile(dir + "/missing.jpg"), DataError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fixres::image
