// CRC-32C (Castagnoli; iSCSI, RFC 3720): the checksum of TFRecord framing, which TensorBoard's
// event files use. Ours rather than a library's: a table and a loop, no new link dependency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres {

// The CRC-32C of `size` bytes at `data` (reflected polynomial 0x82F63B78, initial value and
// final xor 0xFFFFFFFF): crc32c("123456789") = 0xE3069283. `crc` continues a checksum over
// earlier bytes (crc32c(ab) = crc32c(b, crc32c(a))); 0 starts one.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(const std::string& bytes) {
  return crc32c(bytes.data(), bytes.size());
}

// TFRecord's masked form of a CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32), so that
// a checksum stored next to the data it covers is not itself a likely checksum of that data.
uint32_t maskedCrc32c(uint32_t crc);

}  // namespace fixres
