// What the decoder does with hostile files beyond bad pixels: a header announcing a huge image
// is warned about once per file (PIL's DecompressionBombWarning) and refused above the hard
// limit; readFile refuses FIFOs, devices and folders instead of blocking or reading forever.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
