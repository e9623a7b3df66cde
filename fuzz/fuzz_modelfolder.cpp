// A model folder's config.json from arbitrary bytes, through readModelFolder, as predict, eval,
// export and sweep read --weight-path FOLDER: the JSON depth and size checks, a run folder's
// config (RunConfig with its flags' checks) or a timm hub config (sizes, crop fractions,
// interpolation, mean/std, class names, fixres.weights): a ModelCard or a fixres::Error (a
// WeightsError naming the file), nothing else. The folder also holds an empty checkpoint.pth and
// model.safetensors, so the reader gets past the weight file's presence; the weights themselves
// are the torchfile target's.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/engine/ModelCard.h"

namespace {

void writeFile(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fixres-fuzz-folder-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    const std::string d(tmpl);
    writeFile(d + "/checkpoint.pth", nullptr, 0);
    writeFile(d + "/model.safetensors", nullptr, 0);
    return d;
  }();
  writeFile(dir + "/config.json", data, size);
  try {
    const fixres::engine::ModelCard card = fixres::engine::readModelFolder(dir);
    // What a command does next with the card's values: sizes in range, names readable.
    if (card.testSize < 0 || card.trainSize < 0 || card.numClasses < 0) std::abort();
    volatile size_t n = 0;
    for (const auto& name : card.classNames) n += name.size();
  } catch (const fixres::Error&) {
  }
  return 0;
}
