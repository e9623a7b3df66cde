// The published weight files: each family lists its own (ArchitectureFamily::published), with
// what their publishers say about them; these are the catalogue over the families.
#include "fixres/models/Catalogue.h"

#include <regex>

#include "fixres/common/Error.h"
#include "fixres/models/Family.h"

namespace fixres::models {
namespace {
constexpr const char* kFixResFolder =
    "https://dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/";
}  // namespace

PublishedWeights fixresRelease(const char* name, const char* architecture, const char* file,
                               int trainSize, int testSize, double top1, bool halfNormalization) {
  PublishedWeights w;
  w.name = name;
  w.architecture = architecture;
  w.url = std::string(kFixResFolder) + file;
  w.trainSize = trainSize;
  w.testSize = testSize;
  w.top1 = top1;
  w.halfNormalization = halfNormalization;
  w.source = "FixRes README";
  return w;
}

PublishedWeights timmRelease(const char* name, const std::string& architecture, const char* owner,
                             const char* file, int size, bool halfNormalization, const char* tag) {
  PublishedWeights w;
  w.name = name;
  w.architecture = architecture;
  w.url = std::string("https://github.com/") + owner +
          "/pytorch-image-models/releases/download/v0.1-weights/" + file;
  w.sha256 = hashPrefixOfFileName(file);
  w.trainSize = size;
  w.testSize = size;
  w.halfNormalization = halfNormalization;
  w.bicubic = true;
  w.source = std::string("timm ") + tag;
  return w;
}

std::string hashPrefixOfFileName(const std::string& fileName) {
  // torch.hub's HASH_REGEX, r"-([a-f0-9]*)\.", as timm's check_hash applies it.
  static const std::regex kHash(R"(-([a-f0-9]*)\.)");
  std::smatch m;
  return std::regex_search(fileName, m, kHash) ? m[1].str() : "";
}

const std::vector<PublishedWeights>& catalogue() {
  static const std::vector<PublishedWeights> kEntries = [] {
    std::vector<PublishedWeights> all;
    for (const ArchitectureFamily* f : architectureFamilies()) {
      if (f->published == nullptr) continue;
      for (auto& w : f->published()) all.push_back(std::move(w));
    }
    return all;
  }();
  return kEntries;
}

const PublishedWeights& publishedWeights(const std::string& name) {
  for (const auto& w : catalogue())
    if (w.name == name) return w;
  std::string known;
  for (const auto& w : catalogue()) known += (known.empty() ? "" : ", ") + w.name;
  FIXRES_FAIL(UsageError, "--pretrained: unknown name '", name, "' (known: ", known,
              "; see 'fixres weights list')");
}

}  // namespace fixres::models
