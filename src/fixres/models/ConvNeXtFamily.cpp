// The ConvNeXt family's registration: timm's convnext_* names (and fixres's convnext_demo for
// small images), timm's preprocessing, and what FixRes's fine-tuning becomes without BatchNorm.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/ConvNeXt.h"
#include "fixres/models/Family.h"

namespace fixres::models {
namespace {

struct ConvNeXtEntry {
  const char* name;
  std::array<int64_t, 4> depths, dims;
  bool convMlp;
  int64_t stemPatch;
};

// timm's convnext.py definitions.
const std::vector<ConvNeXtEntry>& convNeXtTable() {
  static const std::vector<ConvNeXtEntry> kTable = {
      {"convnext_atto", {2, 2, 6, 2}, {40, 80, 160, 320}, true, 4},
      {"convnext_femto", {2, 2, 6, 2}, {48, 96, 192, 384}, true, 4},
      {"convnext_pico", {2, 2, 6, 2}, {64, 128, 256, 512}, true, 4},
      {"convnext_nano", {2, 2, 8, 2}, {80, 160, 320, 640}, true, 4},
      {"convnext_tiny", {3, 3, 9, 3}, {96, 192, 384, 768}, false, 4},
      {"convnext_small", {3, 3, 27, 3}, {96, 192, 384, 768}, false, 4},
      {"convnext_base", {3, 3, 27, 3}, {128, 256, 512, 1024}, false, 4},
      {"convnext_large", {3, 3, 27, 3}, {192, 384, 768, 1536}, false, 4},
      // fixres's own: for 16-40 px images (the demo data), a 2 px stem (total stride 16).
      {"convnext_demo", {1, 1, 2, 1}, {32, 64, 128, 256}, true, 2},
  };
  return kTable;
}

const ConvNeXtEntry* findConvNeXtEntry(const std::string& name) {
  const std::string base = name.substr(0, name.find('.'));
  for (const auto& e : convNeXtTable())
    if (base == e.name) return &e;
  return nullptr;
}

// timm's weights (fb_in1k, in12k_ft_in1k, d1h_in1k): trained at 224, ImageNet's mean and std,
// bicubic, crop 0.875; their published test size is 288 at crop 1.0.
std::optional<ArchInfo> findConvNeXt(const std::string& name) {
  const ConvNeXtEntry* e = findConvNeXtEntry(name);
  if (!e) return std::nullopt;
  ArchInfo info;
  info.name = e->name;
  info.outputStride = static_cast<int>(e->stemPatch * 8);
  // The stem and the downsampling layers are unpadded strided convolutions: every one needs an
  // input at least as large as its kernel, so the image at least the total stride.
  info.minInputSize = info.outputStride;
  info.bicubic = true;
  if (e->stemPatch == 4) {
    info.testSize = 288;
    info.cropFraction = 1.0;
  } else {
    info.defaultSize = info.testSize = 32;
  }
  return info;
}

Model createConvNeXt(const std::string& name, const ModelOptions& options) {
  auto c = convNeXtConfig(name);
  FIXRES_CHECK(c.has_value(), InternalError, "'", name, "' is not a ConvNeXt");
  c->options = options;
  return std::make_shared<ConvNeXtImpl>(*c);
}

// The layer groups, by stage (timm's coarse grouping): the stem 0, stage s s + 1, the head 5.
int64_t convNeXtHeadLayer(const ModelImpl&) {
  return 5;
}

int64_t convNeXtLayerOf(const ModelImpl& model, const std::string& name) {
  if (name.rfind("stages.", 0) == 0) return std::stoll(name.substr(7, 1)) + 1;
  if (name.rfind("stem.", 0) == 0) return 0;
  return convNeXtHeadLayer(model);
}

// ConvNeXt normalises with LayerNorm: no statistics depend on the resolution. FixRes's "last
// BatchNorm" becomes the head's LayerNorm, which learns its weight and bias with the classifier;
// nothing runs in train mode.
FinetuneRecipe convNeXtRecipe(ModelImpl& model, bool /*bnAffine*/) {
  auto& m = familyModel<ConvNeXtImpl>(model);
  FinetuneRecipe r;
  r.addParameters(*m.headFc);
  r.addParameters(*m.headNorm);
  return r;
}

std::vector<std::string> convNeXtNames() {
  std::vector<std::string> out;
  for (const auto& e : convNeXtTable()) out.emplace_back(e.name);
  return out;
}

}  // namespace

std::optional<ConvNeXtConfig> convNeXtConfig(const std::string& name) {
  const ConvNeXtEntry* e = findConvNeXtEntry(name);
  if (!e) return std::nullopt;
  ConvNeXtConfig c;
  c.name = e->name;
  c.depths = e->depths;
  c.dims = e->dims;
  c.convMlp = e->convMlp;
  c.stemPatch = e->stemPatch;
  if (e->stemPatch != 4) c.defaultSize = 32;
  return c;
}

const ArchitectureFamily& convNeXtFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "convnext";
    f.names = convNeXtNames();
    f.namesNote = "ConvNeXts also with timm's weight tags, e.g. convnext_tiny.fb_in1k";
    f.find = findConvNeXt;
    f.create = createConvNeXt;
    f.finetune = convNeXtRecipe;
    f.layerOf = convNeXtLayerOf;
    f.headLayer = convNeXtHeadLayer;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
