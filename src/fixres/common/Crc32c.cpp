// CRC-32C, one byte at a time through a 256-entry table built at first use.
#include "fixres/common/Crc32c.h"

#include <array>

namespace fixres {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;
constexpr uint32_t kTfRecordMaskDelta = 0xa282ead8u;

const std::array<uint32_t, 256>& crc32cTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  const auto& table = crc32cTable();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

uint32_t maskedCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kTfRecordMaskDelta;
}

}  // namespace fixres
