// SHA-256 (FIPS 180-4), streamed, for checking downloaded weight files against published digests.
// Ours rather than a library's: a hundred lines, no new link dependency for the common layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres {

// Feed bytes with update() in any chunking; hexDigest() ends the message and returns the 64
// lower-case hexadecimal digits. After hexDigest() the object must be reset() before reuse.
class Sha256 {
 public:
  Sha256() { reset(); }
  void reset();
  void update(const void* data, size_t size);
  std::string hexDigest();

 private:
  void block(const uint8_t* p);

  std::array<uint32_t, 8> h_{};
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes fed so far
};

// The digest of a whole string.
std::string sha256Hex(const std::string& bytes);

// The digest of the file at `path`, read in 1 MiB chunks. DataError naming the file when it
// cannot be read.
std::string sha256File(const std::string& path);

}  // namespace fixres
