// The image folder index (.fixres-index) from arbitrary bytes: a listing or nullopt with a reason,
// never a crash; and a listing that decodes holds no path leaving the root and encodes back to
// the same bytes. The first byte chooses the form: even, the bytes are the whole file (magic,
// version, size and CRC-32C checked first); odd, the rest is the payload, given a valid header
// and checksum so that the fuzzer works on the payload itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fixres/common/Crc32c.h"
#include "fixres/data/FileIndex.h"

namespace {

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string bytes = rest;
  if (data[0] & 1) {
    bytes = std::string("FXIDX\0\0\0", 8) + le64(1) + le64(rest.size()) +
            le64(fixres::crc32c(rest)) + rest;
  }
  std::string why;
  const auto index = fixres::data::decodeFolderIndex(bytes, &why);
  if (!index) return 0;
  if (!fixres::data::folderIndexEntryProblem(*index).empty()) std::abort();
  if (fixres::data::encodeFolderIndex(*index) != bytes) std::abort();
  return 0;
}
