// SHA-256 against Python's hashlib (values from hashlib.sha256(...).hexdigest()).
#include "fixres/common/Sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace fixres {
namespace {

TEST(Sha256, MatchesHashlib) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundary (55, 56, 63, 64, 65 bytes): bytes(range(n)).
TEST(Sha256, PaddingBoundaries) {
  const std::pair<int, const char*> cases[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"}};
  for (const auto& [n, hex] : cases) {
    std::string bytes;
    for (int i = 0; i < n; ++i) bytes += static_cast<char>(i);
    EXPECT_EQ(sha256Hex(bytes), hex) << n << " bytes";
  }
}

// 1 MiB of bytes((i * 7 + 3) % 256): whole, fed in uneven chunks, and read from a file.
TEST(Sha256, OneMegabyteAnyChunkingAndFromAFile) {
  const char* expected = "172c15dc2e12b50e523d8e657cbe7fbb11c1053252bbf1e1431077d57d8128fd";
  std::string bytes(size_t(1) << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7 + 3) % 256);
  EXPECT_EQ(sha256Hex(bytes), expected);
  Sha256 s;
  size_t at = 0, step = 1;
  while (at < bytes.size()) {
    const size_t n = std::min(step, bytes.size() - at);
    s.update(bytes.data() + at, n);
    at += n;
    step = step * 3 + 1;  // 1, 4, 13, 40, ... bytes: every alignment against the 64-byte block
  }
  EXPECT_EQ(s.hexDigest(), expected);
  s.reset();
  s.update("abc", 3);
  EXPECT_EQ(s.hexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  const std::string path = ::testing::TempDir() + "/sha256_test.bin";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  EXPECT_EQ(sha256File(path), expected);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fixres
