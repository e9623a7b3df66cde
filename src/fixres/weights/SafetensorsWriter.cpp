// safetensors files written: the header (tensors in the dict's order, then __metadata__), padded
// to 8 bytes, then each tensor's bytes one after the other.
#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/JsonInput.h"
#include "fixres/weights/SafetensorsFile.h"

namespace fixres::models {

void writeSafetensorsFile(const std::string& path,
                          const c10::Dict<std::string, at::Tensor>& tensors,
                          const std::map<std::string, std::string>& metadata) {
  // The bytes of each tensor, little-endian row-major (x86 and ARM hosts are little-endian).
  std::vector<at::Tensor> data;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto& e : tensors) {
    at::Tensor t = e.value().detach().to(at::kCPU).contiguous();
    const uint64_t n = t.nbytes();
    header[e.key()] = {{"dtype", safetensorsDtypeName(t.scalar_type())},
                       {"shape", t.sizes().vec()},
                       {"data_offsets", {offset, offset + n}}};
    offset += n;
    data.push_back(std::move(t));
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = jsonText(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(length >> (8 * i));

  AtomicFile file(path);
  FIXRES_CHECK(file.ok(), OutputError, "cannot write ", path, ": ", file.reason());
  file.write(prefix, sizeof prefix);
  file.write(text.data(), text.size());
  for (const auto& t : data) file.write(t.data_ptr(), t.nbytes());
  FIXRES_CHECK(file.commit(), OutputError, "cannot write ", path, ": ", file.reason(),
               " (any previous file there is unchanged)");
}

}  // namespace fixres::models
