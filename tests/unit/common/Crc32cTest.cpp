// CRC-32C against published check values: the CRC catalogue's check ("123456789"), the test
// vectors of RFC 3720 (iSCSI) appendix B.4, and TFRecord's mask written out as its formula.
#include "fixres/common/Crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace fixres {
namespace {

std::string bytesOf(int n, int first, int stride) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((first + stride * i) & 0xFF);
  return s;
}

TEST(Crc32c, CheckValue) {
  EXPECT_EQ(crc32c(std::string("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string()), 0u);
  EXPECT_EQ(crc32c(std::string("a")), 0xC1D04330u);  // crc32c.py / Go's hash/crc32 Castagnoli
}

TEST(Crc32c, Rfc3720Vectors) {
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);    // 32 bytes of zeros
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);  // 32 bytes of 0xFF
  EXPECT_EQ(crc32c(bytesOf(32, 0, 1)), 0x46DD794Eu);        // 0x00, 0x01, ... 0x1F
  EXPECT_EQ(crc32c(bytesOf(32, 31, -1)), 0x113FDB5Cu);      // 0x1F, 0x1E, ... 0x00
  const unsigned char iscsiRead[48] = {0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                       0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                       0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc32c(iscsiRead, sizeof(iscsiRead)), 0xD9963A56u);  // an iSCSI SCSI Read command
}

TEST(Crc32c, ContinuesOverChunks) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(crc32c(text.data() + cut, text.size() - cut, crc32c(text.data(), cut)), crc32c(text))
        << cut;
}

TEST(Crc32c, TfRecordMask) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    const uint32_t rotated = (crc >> 15) | (crc << 17);
    EXPECT_EQ(maskedCrc32c(crc), static_cast<uint32_t>(rotated + 0xa282ead8u)) << crc;
  }
  EXPECT_EQ(maskedCrc32c(0), 0xa282ead8u);
}

}  // namespace
}  // namespace fixres
