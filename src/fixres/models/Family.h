// Architecture families as plug-ins. A family (ResNet, EfficientNet, PNASNet) describes itself in
// one ArchitectureFamily: its names, how each is built, the preprocessing its published weights
// expect, its FixRes fine-tuning recipe and the other published layout of its weight files.
// models/Families.cpp lists the families; the registry (Registry.h), the weight loader
// (WeightIO.h), fine-tuning (step/FinetuneRecipe.h) and export (engine/Export.h) ask a model's
// family and name none.
#pragma once

#include <torch/nn/module.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/Catalogue.h"
#include "fixres/models/Model.h"

namespace fixres::models {

struct ArchitectureFamily;

// What the rest of fixres needs to know about an architecture without building it, and the
// preprocessing its published weights were made with (timm's pretrained cfg: input_size,
// test_input_size, crop_pct, interpolation, mean, std; torchvision's transforms for the ResNet
// family). Runs take mean and std from here (engine::ModelSpec::preprocessing); their filter,
// sizes and crop come from the run's flags, whose defaults are the FixRes reference's.
struct ArchInfo {
  std::string name;  // canonical name (resnet50, tf_efficientnet_b0, pnasnet5large, ...)
  const ArchitectureFamily* family = nullptr;  // set by the registry
  int outputStride = 32;                       // total downsampling of the last feature map
  int minInputSize = 1;   // the smallest image side it takes (unpadded downsampling: its stride)
  int sizeMultiple = 1;   // every image side must be a multiple of it (a ViT's patch size)
  int defaultSize = 224;  // the resolution its published weights were trained at
  int testSize = 224;     // the resolution their published accuracy is measured at
  double cropFraction = 0.875;  // test crop / resized image side (224 / 256)
  bool bicubic = false;         // resized with a bicubic filter, else bilinear
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet's
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// A FixRes fine-tuning: the parameters that learn (all others are frozen) and the modules that
// keep their training-mode behaviour (BatchNorm re-estimating its statistics at the test
// resolution) while the rest of the network runs in eval mode.
struct FinetuneRecipe {
  std::vector<torch::Tensor> trainable;
  std::vector<std::shared_ptr<torch::nn::Module>> trainMode;
  // Per trainable tensor, its learning rate's multiplier (layer-wise decay); empty: all 1.
  std::vector<double> lrScale;

  // Every parameter of `m` learns.
  void addParameters(const torch::nn::Module& m) {
    for (const auto& p : m.parameters()) trainable.push_back(p);
  }
};

// Which parameters learn when fine-tuning at the test resolution (--finetune-scope):
//   kRecipe  the family's FixRes recipe (the default);
//   kHead    the classifier and the norm before it (a CNN's last BatchNorm: its recipe);
//   kHeadPos kHead and the position embedding (transformers);
//   kAll     every parameter, the learning rate decaying layer by layer from the head down.
enum class FinetuneScope { kRecipe, kHead, kHeadPos, kAll };

// Another published layout of a family's weight files (torchvision's names for EfficientNet).
// The weight loader recognises it in a file's keys and renames them to the model's own names
// before matching (LoadOptions::layouts); export renames the other way (engine/Export.h).
struct KeyLayout {
  std::string name;  // as the export layout: "torchvision"; messages say "<name> names renamed"
  // Whether a file's state-dict keys are in this layout.
  bool (*detect)(const std::vector<std::string>& keys) = nullptr;
  // The file's `key` in `model`'s names (a key the layout does not rename comes back unchanged).
  std::string (*toOwn)(const ModelImpl& model, const std::string& key) = nullptr;
  // `model`'s `key` in this layout; "" when the layout has no such model or name.
  std::string (*fromOwn)(const ModelImpl& model, const std::string& key) = nullptr;
  // Called when weights in this layout load: numerics they expect (nullptr: none).
  void (*adopt)(ModelImpl& model) = nullptr;
};

struct ArchitectureFamily {
  std::string name;  // resnet, efficientnet, pnasnet
  // Canonical names, then other spellings (FixRes's names); knownArchitectures lists every
  // family's canonical names before the aliases.
  std::vector<std::string> names, aliases;
  // Names accepted beyond those listed, for the unknown-name message ("" when none).
  std::string namesNote;
  // The architecture `name` names (canonical name, alias or variant spelling), std::nullopt when
  // the family does not know it. May throw UsageError for a name it knows but cannot build.
  std::optional<ArchInfo> (*find)(const std::string& name) = nullptr;
  // Builds the architecture of canonical name `name` with random initialisation from torch's
  // generator (options.numClasses is checked by the registry).
  Model (*create)(const std::string& name, const ModelOptions& options) = nullptr;
  // Its FixRes fine-tuning recipe, of a model it built; `bnAffine`: the BatchNorm that
  // re-estimates its statistics also learns its weight and bias.
  FinetuneRecipe (*finetune)(ModelImpl& model, bool bnAffine) = nullptr;
  // The recipe of kRecipe, kHead or kHeadPos; nullptr: kRecipe and kHead are `finetune`,
  // kHeadPos refused. (kAll is the engine's, from `layerOf`.)
  FinetuneRecipe (*finetuneScope)(ModelImpl& model, FinetuneScope scope, bool bnAffine) = nullptr;
  // The parameter groups, as timm's group_matcher: the layer of parameter `name`, from 0 (the
  // stem or the embeddings) to `headLayer` (the head and the norm before it). --finetune-scope
  // all scales each parameter's learning rate by layerDecay^(headLayer - layer), in one engine
  // implementation (step/FinetuneRecipe.cpp); nullptr: every parameter at the full rate.
  int64_t (*layerOf)(const ModelImpl& model, const std::string& name) = nullptr;
  int64_t (*headLayer)(const ModelImpl& model) = nullptr;

  // Another published layout its weight files come in, loaded and exported.
  std::optional<KeyLayout> foreignLayout;
  // Entries of a weight file the family fits to its model as they load (a transformer's position
  // embedding laid out for another image size: resampled). `fits`: whether the file's `name` of
  // `fileShape` (differing from the model's) is taken; `fit`: the model's tensor from the file's
  // (WeightsError naming `source` when it cannot be). nullptr: shapes must match.
  bool (*fits)(const ModelImpl& model, const std::string& name,
               at::IntArrayRef fileShape) = nullptr;
  at::Tensor (*fit)(const ModelImpl& model, const std::string& name, const at::Tensor& file,
                    const std::string& source) = nullptr;
  // The square image side a weight file's entry `name` of `fileShape` is laid out for (a
  // transformer's position embedding: its patch grid times the patch), 0 when the entry says
  // nothing of it. A model fed several sizes is built at that side, so that every size resamples
  // from the file's own grid, once, as timm's dynamic_img_size does. nullptr: no such entry.
  int (*fileImageSize)(const ModelImpl& model, const std::string& name,
                       at::IntArrayRef fileShape) = nullptr;
  // A sentence saying why a file of these keys does not fit `model` (register tokens the model
  // lacks, ...), "" when the family has nothing particular to say; nullptr: nothing.
  std::string (*explainMismatch)(const ModelImpl& model,
                                 const std::vector<std::string>& fileKeys) = nullptr;
  // Its published weight files (--pretrained NAME; `fixres weights list`), as timm's
  // pretrained_cfg entries carry their URL beside the preprocessing; nullptr: none.
  std::vector<PublishedWeights> (*published)() = nullptr;
  // Its own state-dict names are torchvision's too (they are timm's for every family).
  bool torchvisionNames = false;
};

// The registered families, in the order their names are listed (models/Families.cpp).
const std::vector<const ArchitectureFamily*>& architectureFamilies();

// `model` as the module type of the family whose function is called with it; InternalError for
// another type.
template <typename Impl>
Impl& familyModel(ModelImpl& model) {
  auto* m = dynamic_cast<Impl*>(&model);
  FIXRES_CHECK(m != nullptr, InternalError, "a ", model.family().name,
               " model given to another family's function");
  return *m;
}
template <typename Impl>
const Impl& familyModel(const ModelImpl& model) {
  auto* m = dynamic_cast<const Impl*>(&model);
  FIXRES_CHECK(m != nullptr, InternalError, "a ", model.family().name,
               " model given to another family's function");
  return *m;
}

}  // namespace fixres::models
