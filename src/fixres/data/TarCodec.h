// The tar header codec: ustar headers written (names split into prefix and name), and headers
// read back (octal and GNU base-256 numbers, the checksum, the ustar name, PAX records).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::data {

// A tar block: a header is one, a member's data is padded to whole blocks.
inline constexpr size_t kTarBlock = 512;

// The bytes `size` bytes of member data take in the archive: whole blocks.
inline uint64_t tarPadded(uint64_t size) {
  return (size + kTarBlock - 1) / kTarBlock * kTarBlock;
}

// Splits `name` into ustar's prefix (<= 155) and name (<= 100) at a '/'; false when impossible.
bool splitUstarName(const std::string& name, std::string* prefix, std::string* base);

// A regular-file header (mode 0644, owner 0, mtime 0: shards are byte-identical for one seed).
// InternalError when `name` cannot be split (splitUstarName), DataError when `size` is 8 GiB or
// more.
std::array<char, kTarBlock> ustarHeader(const std::string& name, uint64_t size);

// A numeric header field: octal text (NUL/space terminated) or GNU base-256 (high bit set).
bool parseTarNumber(const char* field, size_t width, uint64_t* out);

// The checksum of the header block `h` as computed: its bytes summed, the checksum field counted
// as spaces.
uint64_t tarChecksum(const std::array<char, kTarBlock>& h);

// The member name the header block `h` holds: its name field, after the ustar prefix when there
// is one.
std::string tarHeaderName(const std::array<char, kTarBlock>& h);

// The pax extended header records "LEN key=value\n" that matter here: path and size.
void parsePax(const std::string& text, std::string* path, uint64_t* size, bool* hasSize);

}  // namespace fixres::data
