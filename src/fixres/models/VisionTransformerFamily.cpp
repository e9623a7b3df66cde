// The ViT family's registration: timm's vit_* and deit_* names (and fixres's vit_demo for small
// images), timm's preprocessing of their weights, the fine-tuning scopes of a transformer, and
// weight files whose position embedding is laid out for another image size, resampled as they
// load (timm's checkpoint_filter_fn).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/Family.h"
#include "fixres/models/PosEmbed.h"
#include "fixres/models/VisionTransformer.h"

namespace fixres::models {
namespace {

enum class VitKind { kVit, kVitReg, kDinoReg, kDeit, kDeitDistilled, kDeit3, kDemo };

struct VitEntry {
  const char* name;
  VitKind kind;
  int64_t patch, dim, depth, heads;
  int size;
};

// timm's model definitions (vision_transformer.py, deit.py): patch size, width, depth, heads,
// image size; the kind sets the tokens, pooling and layer scale.
const std::vector<VitEntry>& vitTable() {
  static const std::vector<VitEntry> kTable = {
      {"vit_tiny_patch16_224", VitKind::kVit, 16, 192, 12, 3, 224},
      {"vit_tiny_patch16_384", VitKind::kVit, 16, 192, 12, 3, 384},
      {"vit_small_patch32_224", VitKind::kVit, 32, 384, 12, 6, 224},
      {"vit_small_patch16_224", VitKind::kVit, 16, 384, 12, 6, 224},
      {"vit_small_patch16_384", VitKind::kVit, 16, 384, 12, 6, 384},
      {"vit_base_patch32_224", VitKind::kVit, 32, 768, 12, 12, 224},
      {"vit_base_patch16_224", VitKind::kVit, 16, 768, 12, 12, 224},
      {"vit_base_patch16_384", VitKind::kVit, 16, 768, 12, 12, 384},
      {"vit_base_patch8_224", VitKind::kVit, 8, 768, 12, 12, 224},
      {"vit_large_patch16_224", VitKind::kVit, 16, 1024, 24, 16, 224},
      {"vit_large_patch16_384", VitKind::kVit, 16, 1024, 24, 16, 384},
      {"vit_medium_patch16_reg4_gap_256", VitKind::kVitReg, 16, 512, 12, 8, 256},
      {"vit_mediumd_patch16_reg4_gap_256", VitKind::kVitReg, 16, 512, 20, 8, 256},
      {"vit_betwixt_patch16_reg4_gap_256", VitKind::kVitReg, 16, 640, 12, 10, 256},
      // DINOv2 with registers: a 37 x 37 grid of 14 px patches at 518 px.
      {"vit_small_patch14_reg4_dinov2", VitKind::kDinoReg, 14, 384, 12, 6, 518},
      {"vit_base_patch14_reg4_dinov2", VitKind::kDinoReg, 14, 768, 12, 12, 518},
      {"vit_large_patch14_reg4_dinov2", VitKind::kDinoReg, 14, 1024, 24, 16, 518},
      {"deit_tiny_patch16_224", VitKind::kDeit, 16, 192, 12, 3, 224},
      {"deit_small_patch16_224", VitKind::kDeit, 16, 384, 12, 6, 224},
      {"deit_base_patch16_224", VitKind::kDeit, 16, 768, 12, 12, 224},
      {"deit_base_patch16_384", VitKind::kDeit, 16, 768, 12, 12, 384},
      {"deit_tiny_distilled_patch16_224", VitKind::kDeitDistilled, 16, 192, 12, 3, 224},
      {"deit_small_distilled_patch16_224", VitKind::kDeitDistilled, 16, 384, 12, 6, 224},
      {"deit_base_distilled_patch16_224", VitKind::kDeitDistilled, 16, 768, 12, 12, 224},
      {"deit_base_distilled_patch16_384", VitKind::kDeitDistilled, 16, 768, 12, 12, 384},
      {"deit3_small_patch16_224", VitKind::kDeit3, 16, 384, 12, 6, 224},
      {"deit3_base_patch16_224", VitKind::kDeit3, 16, 768, 12, 12, 224},
      // fixres's own: a small ViT for 16-40 px images (the demo data), 4 px patches.
      {"vit_demo", VitKind::kDemo, 4, 96, 6, 3, 32},
  };
  return kTable;
}

const VitEntry* findVitEntry(const std::string& name) {
  // timm's pretrained tags (".augreg_in21k_ft_in1k") name the same architecture.
  const std::string base = name.substr(0, name.find('.'));
  for (const auto& e : vitTable())
    if (base == e.name) return &e;
  return nullptr;
}

// The preprocessing of timm's weights: the original ViTs (augreg) and the register models use
// mean = std = 0.5 and crop 0.9 (0.95 for the registers), DeiT ImageNet's and 0.875 (DeiT III
// and DINOv2 1.0, DINOv2 with ImageNet's mean and std); all bicubic.
std::optional<ArchInfo> findVit(const std::string& name) {
  const VitEntry* e = findVitEntry(name);
  if (!e) return std::nullopt;
  ArchInfo info;
  info.name = e->name;
  info.outputStride = static_cast<int>(e->patch);
  info.minInputSize = info.outputStride;
  info.sizeMultiple = info.outputStride;
  info.defaultSize = e->size;
  info.testSize = e->size;
  info.bicubic = true;
  switch (e->kind) {
    case VitKind::kVit:
    case VitKind::kVitReg:
      info.mean = {0.5f, 0.5f, 0.5f};
      info.std = {0.5f, 0.5f, 0.5f};
      info.cropFraction = e->kind == VitKind::kVitReg ? 0.95 : 0.9;
      break;
    case VitKind::kDeit3:
    case VitKind::kDinoReg:
      info.cropFraction = 1.0;
      break;
    case VitKind::kDeit:
    case VitKind::kDeitDistilled:
    case VitKind::kDemo:
      break;
  }
  return info;
}

}  // namespace

std::optional<VitConfig> vitConfig(const std::string& name) {
  const VitEntry* e = findVitEntry(name);
  if (!e) return std::nullopt;
  VitConfig c;
  c.name = e->name;
  c.patchSize = e->patch;
  c.embedDim = e->dim;
  c.depth = e->depth;
  c.numHeads = e->heads;
  c.defaultSize = e->size;
  switch (e->kind) {
    case VitKind::kVitReg:  // timm: class_token False, no_embed_class, reg_tokens 4, avg pool
      c.classToken = false;
      c.regTokens = 4;
      c.noEmbedClass = true;
      c.avgPool = true;
      c.layerScale = 1e-5;
      break;
    case VitKind::kDinoReg:  // timm: class token and reg_tokens 4, no_embed_class, init_values 1e-5
      c.regTokens = 4;
      c.noEmbedClass = true;
      c.layerScale = 1e-5;
      break;
    case VitKind::kDeitDistilled:
      c.distilled = true;
      break;
    case VitKind::kDeit3:  // no_embed_class, init_values 1e-6
      c.noEmbedClass = true;
      c.layerScale = 1e-6;
      break;
    case VitKind::kDemo:
      c.defaultDropPath = 0.1;
      break;
    case VitKind::kVit:
    case VitKind::kDeit:
      break;
  }
  return c;
}

namespace {

Model createVit(const std::string& name, const ModelOptions& options) {
  auto c = vitConfig(name);
  FIXRES_CHECK(c.has_value(), InternalError, "'", name, "' is not a ViT");
  c->options = options;
  return std::make_shared<VisionTransformerImpl>(*c);
}

// The scope fixres fine-tunes a ViT with at the test resolution by default: the head, the final
// norm and the position embedding (docs/results.md, "Transformers": the experiment behind it).
constexpr FinetuneScope kVitDefaultScope = FinetuneScope::kHeadPos;

// The layer groups (timm's vit group_matcher): the embeddings and tokens 0, block i i + 1, the
// final norm and the heads depth + 1.
int64_t vitHeadLayer(const ModelImpl& model) {
  return familyModel<VisionTransformerImpl>(model).config().depth + 1;
}

int64_t vitLayerOf(const ModelImpl& model, const std::string& name) {
  if (name.rfind("blocks.", 0) == 0) return std::stoll(name.substr(7, name.find('.', 7) - 7)) + 1;
  if (name == "cls_token" || name == "reg_token" || name == "dist_token" || name == "pos_embed" ||
      name.rfind("patch_embed.", 0) == 0)
    return 0;
  return vitHeadLayer(model);  // norm, fc_norm, head, head_dist
}

FinetuneRecipe vitScopedRecipe(ModelImpl& model, FinetuneScope scope, bool /*bnAffine*/) {
  auto& m = familyModel<VisionTransformerImpl>(model);
  if (scope == FinetuneScope::kRecipe) scope = kVitDefaultScope;
  // A transformer has no BatchNorm statistics: nothing runs in train mode; the head and the norm
  // before it learn (the final norm is what FixRes's last BatchNorm becomes).
  FinetuneRecipe r;
  r.addParameters(*m.head);
  if (m.head_dist) r.addParameters(*m.head_dist);
  r.addParameters(*m.finalNorm());
  if (scope == FinetuneScope::kHeadPos) r.trainable.push_back(m.pos_embed);
  return r;
}

FinetuneRecipe vitRecipe(ModelImpl& model, bool bnAffine) {
  return vitScopedRecipe(model, FinetuneScope::kRecipe, bnAffine);
}

// A position embedding of another token count: resampled to the model's grid when the file's
// patch tokens form a square grid (timm's checkpoint_filter_fn assumes one).
bool vitFits(const ModelImpl& model, const std::string& name, at::IntArrayRef fileShape) {
  const auto& m = familyModel<VisionTransformerImpl>(model);
  return name == "pos_embed" && fileShape.size() == 3 && fileShape[0] == 1 &&
         fileShape[2] == m.config().embedDim;
}

at::Tensor vitFit(const ModelImpl& model, const std::string& name, const at::Tensor& file,
                  const std::string& source) {
  const auto& m = familyModel<VisionTransformerImpl>(model);
  const int64_t prefix = m.embeddedPrefixTokens();
  const int64_t patches = file.size(1) - prefix;
  const int64_t side = squareGridSide(patches);
  FIXRES_CHECK(side > 0, WeightsError, source, ": ", name, " has ", file.size(1), " tokens, ",
               prefix, " for the ", m.config().name, "'s class/distillation tokens and ", patches,
               " for the patches, which is not a square grid: the file was not made for ",
               "a square image size that is a multiple of the patch size (", m.config().patchSize,
               " px), or it is for another token layout");
  return resampleAbsPosEmbed(file, m.grid(), {side, side}, prefix);
}

int vitFileImageSize(const ModelImpl& model, const std::string& name, at::IntArrayRef fileShape) {
  const auto& m = familyModel<VisionTransformerImpl>(model);
  if (name != "pos_embed" || fileShape.size() != 3 || fileShape[2] != m.config().embedDim) return 0;
  const int64_t side = squareGridSide(fileShape[1] - m.embeddedPrefixTokens());
  return side > 0 ? static_cast<int>(side * m.config().patchSize) : 0;
}

std::string vitExplain(const ModelImpl& model, const std::vector<std::string>& keys) {
  const auto& m = familyModel<VisionTransformerImpl>(model);
  const auto has = [&](const char* k) {
    for (const auto& key : keys)
      if (key == k) return true;
    return false;
  };
  const std::string& n = m.config().name;
  if (has("reg_token") && !m.reg_token.defined())
    return "the file has register tokens (reg_token) and " + n +
           " has none: load it into the register model it was made for (vit_*_reg4_*)";
  if (!has("reg_token") && m.reg_token.defined())
    return "the file has no register tokens (reg_token) and " + n + " has " +
           std::to_string(m.config().regTokens) + ": load it into a model without them";
  if (has("dist_token") != m.dist_token.defined())
    return std::string("the file ") + (has("dist_token") ? "has" : "has no") +
           " distillation token (dist_token, head_dist) and " + n +
           (m.dist_token.defined() ? " has one" : " has none") +
           ": use the deit_*_distilled_* name for distilled weights";
  if (has("cls_token") != m.cls_token.defined())
    return std::string("the file ") + (has("cls_token") ? "has" : "has no") +
           " class token (cls_token) and " + n + (m.cls_token.defined() ? " has one" : " has none");
  return "";
}

std::vector<std::string> vitNames() {
  std::vector<std::string> out;
  for (const auto& e : vitTable()) out.emplace_back(e.name);
  return out;
}

}  // namespace

const ArchitectureFamily& vitFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "vit";
    f.names = vitNames();
    f.namesNote = "ViTs also with timm's weight tags, e.g. vit_small_patch16_224.augreg_in21k";
    f.find = findVit;
    f.create = createVit;
    f.finetune = vitRecipe;
    f.finetuneScope = vitScopedRecipe;
    f.layerOf = vitLayerOf;
    f.headLayer = vitHeadLayer;
    f.fits = vitFits;
    f.fit = vitFit;
    f.fileImageSize = vitFileImageSize;
    f.explainMismatch = vitExplain;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
