// The tar header codec: ustar headers written, headers read back (numbers, checksum, names, PAX).
#include "fixres/data/TarCodec.h"

#include <cstdlib>
#include <cstring>

#include "fixres/common/Error.h"

namespace fixres::data {

namespace {

// Writes `value` as `width - 1` octal digits and a NUL into field[0..width).
void putOctal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0; value >>= 3) digits[i] = static_cast<char>('0' + (value & 7));
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

// A text field: up to its first NUL.
std::string tarField(const char* field, size_t width) {
  return std::string(field, strnlen(field, width));
}

}  // namespace

bool splitUstarName(const std::string& name, std::string* prefix, std::string* base) {
  if (name.size() <= 100) {
    *prefix = "";
    *base = name;
    return true;
  }
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    if (slash <= 155 && name.size() - slash - 1 <= 100 && slash + 1 < name.size()) {
      *prefix = name.substr(0, slash);
      *base = name.substr(slash + 1);
      return true;
    }
  }
  return false;
}

std::array<char, kTarBlock> ustarHeader(const std::string& name, uint64_t size) {
  std::array<char, kTarBlock> h{};
  std::string prefix, base;
  if (!splitUstarName(name, &prefix, &base))
    FIXRES_FAIL(InternalError, "tar member name does not fit a ustar header: ", name);
  FIXRES_CHECK(size < (1ull << 33), DataError, name, ": ", size,
               " bytes is more than a ustar member holds (8 GiB)");
  std::memcpy(h.data(), base.data(), base.size());
  putOctal(h.data() + 100, 8, 0644);
  putOctal(h.data() + 108, 8, 0);
  putOctal(h.data() + 116, 8, 0);
  putOctal(h.data() + 124, 12, size);
  putOctal(h.data() + 136, 12, 0);
  h[156] = '0';
  std::memcpy(h.data() + 257, "ustar", 6);  // with its NUL
  std::memcpy(h.data() + 263, "00", 2);
  std::memcpy(h.data() + 345, prefix.data(), prefix.size());
  std::memset(h.data() + 148, ' ', 8);
  uint64_t sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  putOctal(h.data() + 148, 7, sum);  // six digits, NUL, and the space already there
  return h;
}

bool parseTarNumber(const char* field, size_t width, uint64_t* out) {
  const auto* u = reinterpret_cast<const unsigned char*>(field);
  if (u[0] & 0x80) {
    uint64_t v = u[0] & 0x7f;
    for (size_t i = 1; i < width; ++i) {
      if (v >> 55) return false;
      v = (v << 8) | u[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t v = 0;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 60) return false;
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return false;
  }
  *out = v;
  return any;
}

uint64_t tarChecksum(const std::array<char, kTarBlock>& h) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
  return sum;
}

std::string tarHeaderName(const std::array<char, kTarBlock>& h) {
  const std::string prefix = tarField(h.data() + 345, 155);
  const std::string base = tarField(h.data(), 100);
  const bool ustar = std::memcmp(h.data() + 257, "ustar", 5) == 0;
  return ustar && !prefix.empty() ? prefix + "/" + base : base;
}

void parsePax(const std::string& text, std::string* path, uint64_t* size, bool* hasSize) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t space = text.find(' ', pos);
    if (space == std::string::npos) return;
    const size_t len = std::strtoull(text.c_str() + pos, nullptr, 10);
    if (len == 0 || pos + len > text.size()) return;
    const std::string record = text.substr(space + 1, pos + len - space - 2);  // without '\n'
    const size_t eq = record.find('=');
    if (eq != std::string::npos) {
      const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
      if (key == "path") *path = value;
      if (key == "size") {
        *size = std::strtoull(value.c_str(), nullptr, 10);
        *hasSize = true;
      }
    }
    pos += len;
  }
}

}  // namespace fixres::data
