// Telling the weight formats apart by their first bytes, and opening the matching reader.
#include "fixres/weights/WeightSource.h"

#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"
#include "fixres/weights/LegacyTorchFile.h"
#include "fixres/weights/SafetensorsFile.h"
#include "fixres/weights/TorchFile.h"

namespace fixres::models {
namespace {

// The bytes a file's format is told from.
constexpr size_t kHeadBytes = 16;

// The reader of `format`, constructed from `args` (a path, or bytes in memory and a name).
template <typename... Args>
std::unique_ptr<WeightSource> openFormat(WeightFormat format, const std::string& name,
                                         const Args&... args) {
  switch (format) {
    case WeightFormat::kTorchZip:
      return std::make_unique<TorchArchive>(args...);
    case WeightFormat::kTorchLegacy:
      return std::make_unique<LegacyTorchFile>(args...);
    case WeightFormat::kSafetensors:
      return std::make_unique<SafetensorsFile>(args...);
    case WeightFormat::kUnknown:
      break;
  }
  FIXRES_FAIL(WeightsError, name,
              " is not a weights file fixres reads: neither a torch.save file (zip, or the "
              "legacy format before PyTorch 1.6) nor a safetensors file");
}

}  // namespace

WeightFormat detectWeightFormat(const std::string& head) {
  auto byteAt = [&](size_t k) {
    return k < head.size() ? static_cast<unsigned char>(head[k]) : -1;
  };
  if (byteAt(0) == 'P' && byteAt(1) == 'K' && byteAt(2) == 3 && byteAt(3) == 4)
    return WeightFormat::kTorchZip;
  // safetensors: a u64 header length, then the header's JSON object. (A length past the file is
  // left to the reader, which says so.) Asked before the pickle: a length whose low byte is 0x80
  // is a safetensors file, while a pickled torch.save has its magic number's 0xf9 at byte 8.
  if (byteAt(8) == '{') return WeightFormat::kSafetensors;
  if (byteAt(0) == 0x80) return WeightFormat::kTorchLegacy;  // a pickle of protocol >= 2
  return WeightFormat::kUnknown;
}

std::unique_ptr<WeightSource> openWeightSource(const std::string& path) {
  ByteSource bytes(path);  // missing, not a regular file, empty: named here
  return openFormat(detectWeightFormat(bytes.readUpTo(0, kHeadBytes)), path, path);
}

std::unique_ptr<WeightSource> openWeightSource(const void* data, size_t size,
                                               const std::string& name) {
  ByteSource bytes(data, size, name);
  return openFormat(detectWeightFormat(bytes.readUpTo(0, kHeadBytes)), name, data, size, name);
}

}  // namespace fixres::models
