// The EfficientNet family's registration: timm's names and variants (the paper's scaling), timm's
// preprocessing, the reference's fine-tuning recipe, and torchvision's layout of efficientnet_b*
// weight files, renamed to timm's names when they load and back when exported.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/models/EfficientNet.h"
#include "fixres/models/Family.h"

namespace fixres::models {
namespace {

struct EnVariant {
  const char* suffix;  // b0 ... l2
  double width, depth;
  int size;
  double dropRate;
  double cropFraction;  // timm's crop_pct for the TensorFlow weights at `size`
};
// The paper's (width, depth, resolution, dropout) per model, and timm's test crop.
constexpr EnVariant kEnVariants[] = {
    {"b0", 1.0, 1.0, 224, 0.2, 0.875}, {"b1", 1.0, 1.1, 240, 0.2, 0.882},
    {"b2", 1.1, 1.2, 260, 0.3, 0.890}, {"b3", 1.2, 1.4, 300, 0.3, 0.904},
    {"b4", 1.4, 1.8, 380, 0.4, 0.922}, {"b5", 1.6, 2.2, 456, 0.4, 0.934},
    {"b6", 1.8, 2.6, 528, 0.5, 0.942}, {"b7", 2.0, 3.1, 600, 0.5, 0.949},
    {"b8", 2.2, 3.6, 672, 0.5, 0.954}, {"l2", 4.3, 5.3, 800, 0.5, 0.96}};

// The variant `name` names, with whether it is a TensorFlow port (tf_); nullptr for other names.
const EnVariant* enMatchVariant(const std::string& name, bool* tf) {
  // [tf_]efficientnet_<variant>, then a weight suffix (_ap, _ns, ...) or a timm tag (.ns_jft_in1k).
  static const std::regex kName(
      R"(^(tf_)?efficientnet_(b[0-8]|l2)((_[a-z0-9]+)*)(\.[A-Za-z0-9_]+)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, kName)) return nullptr;
  *tf = m[1].matched;
  const std::string v = m[2];
  // timm defines b8 and l2 only as TensorFlow ports.
  if (!*tf && (v == "b8" || v == "l2")) return nullptr;
  for (const auto& var : kEnVariants)
    if (v == var.suffix) return &var;
  return nullptr;
}

std::vector<std::string> enNames() {
  std::vector<std::string> names;
  for (const auto& v : kEnVariants) names.push_back(std::string("tf_efficientnet_") + v.suffix);
  for (const auto& v : kEnVariants)
    if (std::string(v.suffix) != "b8" && std::string(v.suffix) != "l2")
      names.push_back(std::string("efficientnet_") + v.suffix);
  return names;
}

std::string enCanonicalName(bool tf, const EnVariant& v) {
  return std::string(tf ? "tf_" : "") + "efficientnet_" + v.suffix;
}

// timm's pretrained cfg of the TensorFlow weights: the paper's resolution, tested there with
// their crop, bicubic, ImageNet's mean and std (the AdvProp weights' 0.5 is a property of those
// files: models/Catalogue.cpp). timm's and torchvision's own efficientnet_* weights partly use
// other sizes.
std::optional<ArchInfo> findEfficientNet(const std::string& name) {
  FIXRES_CHECK(name != "EfficientNet", UsageError,
               "architecture 'EfficientNet' needs the model named by --EfficientNet-models "
               "(e.g. tf_efficientnet_b0_ap)");
  bool tf = false;
  const EnVariant* v = enMatchVariant(name, &tf);
  if (!v) return std::nullopt;
  ArchInfo info;
  info.name = enCanonicalName(tf, *v);
  info.defaultSize = v->size;
  info.testSize = v->size;
  info.cropFraction = v->cropFraction;
  info.bicubic = true;
  return info;
}

Model createEfficientNet(const std::string& name, const ModelOptions& options) {
  auto c = efficientNetConfig(name);
  FIXRES_CHECK(c.has_value(), InternalError, "'", name, "' is not an EfficientNet");
  c->options = options;
  return std::make_shared<EfficientNetImpl>(*c);
}

// The reference's main_finetune: the classifier and conv_head learn; conv_head and bn2 run in
// train mode (bn2 re-estimates its statistics), and with `bnAffine` bn2 also learns its weight
// and bias.
FinetuneRecipe efficientNetRecipe(ModelImpl& model, bool bnAffine) {
  auto& m = familyModel<EfficientNetImpl>(model);
  FinetuneRecipe r;
  r.addParameters(*m.classifier());
  r.addParameters(*m.conv_head);
  if (bnAffine) r.addParameters(*m.bn2);
  r.trainMode.push_back(m.conv_head.ptr());
  r.trainMode.push_back(m.bn2.ptr());
  return r;
}

bool enIsTorchvisionLayout(const std::vector<std::string>& keys) {
  return std::any_of(keys.begin(), keys.end(),
                     [](const std::string& k) { return k.rfind("features.", 0) == 0; });
}

// torchvision: features.0 = stem (0 conv, 1 norm); features.1-7 = stages, each block a
// Sequential `block` of [expand], depthwise, SE (fc1, fc2), project; features.8 = head;
// classifier.1 = the linear layer.
std::string enFromTorchvision(const ModelImpl& model, const std::string& key) {
  static const std::regex kFeature(R"(^features\.(\d+)\.(.*)$)");
  static const std::regex kBlock(R"(^(\d+)\.block\.(\d+)\.(.*)$)");
  const std::vector<int64_t>& expansions = familyModel<EfficientNetImpl>(model).stageExpansions();
  std::smatch m;
  if (key.rfind("classifier.1.", 0) == 0) return "classifier." + key.substr(13);
  if (!std::regex_match(key, m, kFeature)) return key;
  int64_t f = std::stoll(m[1]);
  std::string rest = m[2];
  auto convNorm = [&](const std::string& conv, const std::string& bn, const std::string& r) {
    if (r.rfind("0.", 0) == 0) return conv + "." + r.substr(2);
    if (r.rfind("1.", 0) == 0) return bn + "." + r.substr(2);
    return std::string();
  };
  const int64_t stages = static_cast<int64_t>(expansions.size());
  if (f == 0) {
    auto k = convNorm("conv_stem", "bn1", rest);
    return k.empty() ? key : k;
  }
  if (f == stages + 1) {
    auto k = convNorm("conv_head", "bn2", rest);
    return k.empty() ? key : k;
  }
  if (f < 1 || f > stages || !std::regex_match(rest, m, kBlock)) return key;
  std::string prefix = "blocks." + std::to_string(f - 1) + "." + m[1].str() + ".";
  int64_t layer = std::stoll(m[2]);
  std::string r = m[3];
  bool inverted = expansions[f - 1] != 1;
  if (!inverted) layer += 1;  // no expansion layer: depthwise is block.0
  std::string out;
  switch (layer) {
    case 0:
      out = convNorm("conv_pw", "bn1", r);
      break;
    case 1:
      out = convNorm("conv_dw", inverted ? "bn2" : "bn1", r);
      break;
    case 2:
      if (r.rfind("fc1.", 0) == 0) out = "se.conv_reduce." + r.substr(4);
      if (r.rfind("fc2.", 0) == 0) out = "se.conv_expand." + r.substr(4);
      break;
    case 3:
      out = inverted ? convNorm("conv_pwl", "bn3", r) : convNorm("conv_pw", "bn2", r);
      break;
    default:
      break;
  }
  return out.empty() ? key : prefix + out;
}

// torchvision's name of `key` ("" for the tf_ variants, which torchvision does not have).
std::string enToTorchvision(const ModelImpl& model, const std::string& key) {
  const auto& en = familyModel<EfficientNetImpl>(model);
  if (en.config().tfSame) return "";
  const std::vector<int64_t>& expansions = en.stageExpansions();
  static const std::regex kBlock(R"(^blocks\.(\d+)\.(\d+)\.(.*)$)");
  const std::string head = "features." + std::to_string(expansions.size() + 1) + ".";
  struct Rename {
    const char* from;
    const char* to;
  };
  static const Rename kTop[] = {
      {"conv_stem.", "features.0.0."}, {"bn1.", "features.0.1."}, {"classifier.", "classifier.1."}};
  for (const auto& r : kTop)
    if (key.rfind(r.from, 0) == 0) return r.to + key.substr(std::strlen(r.from));
  if (key.rfind("conv_head.", 0) == 0) return head + "0." + key.substr(10);
  if (key.rfind("bn2.", 0) == 0) return head + "1." + key.substr(4);
  std::smatch m;
  if (!std::regex_match(key, m, kBlock)) return "";
  const int64_t stage = std::stoll(m[1]);
  if (stage >= static_cast<int64_t>(expansions.size())) return "";
  const bool inverted = expansions[stage] != 1;
  static const Rename kInverted[] = {{"conv_pw.", "0.0."},          {"bn1.", "0.1."},
                                     {"conv_dw.", "1.0."},          {"bn2.", "1.1."},
                                     {"se.conv_reduce.", "2.fc1."}, {"se.conv_expand.", "2.fc2."},
                                     {"conv_pwl.", "3.0."},         {"bn3.", "3.1."}};
  static const Rename kSeparable[] = {{"conv_dw.", "0.0."},          {"bn1.", "0.1."},
                                      {"se.conv_reduce.", "1.fc1."}, {"se.conv_expand.", "1.fc2."},
                                      {"conv_pw.", "2.0."},          {"bn2.", "2.1."}};
  const std::string rest = m[3];
  const std::string prefix = "features." + std::to_string(stage + 1) + "." + m[2].str() + ".block.";
  for (const auto& r : inverted ? std::vector<Rename>(std::begin(kInverted), std::end(kInverted))
                                : std::vector<Rename>(std::begin(kSeparable), std::end(kSeparable)))
    if (rest.rfind(r.from, 0) == 0) return prefix + r.to + rest.substr(std::strlen(r.from));
  return "";
}

// torchvision's b5-b7 use BatchNorm eps 1e-3 (momentum 0.01): set when their weights load.
void enAdoptTorchvision(ModelImpl& model) {
  const std::string& n = familyModel<EfficientNetImpl>(model).config().name;
  if (n != "efficientnet_b5" && n != "efficientnet_b6" && n != "efficientnet_b7") return;
  for (auto& m : model.modules(/*include_self=*/false))
    if (auto* b = m->as<BatchNorm2d>()) {
      b->options.eps(1e-3);
      b->options.momentum(0.01);
    }
}

// A timm release of tf_efficientnet_<variant>.
PublishedWeights timm(const char* name, const char* variant, const char* owner, const char* file,
                      int size, bool halfNormalization, const char* tag) {
  return timmRelease(name, std::string("tf_efficientnet_") + variant, owner, file, size,
                     halfNormalization, tag);
}

std::vector<PublishedWeights> efficientNetPublished() {
  return {
      // timm: https://github.com/huggingface/pytorch-image-models, timm/models/efficientnet.py
      // default_cfgs (AutoAugment, AdvProp, Noisy Student, RandAugment weights).
      timm("tf_efficientnet_b0_aa", "b0", "rwightman", "tf_efficientnet_b0_aa-827b6e33.pth", 224,
           false, "tf_efficientnet_b0.aa_in1k"),
      timm("tf_efficientnet_b1_aa", "b1", "rwightman", "tf_efficientnet_b1_aa-ea7a6ee0.pth", 240,
           false, "tf_efficientnet_b1.aa_in1k"),
      timm("tf_efficientnet_b2_aa", "b2", "rwightman", "tf_efficientnet_b2_aa-60c94f97.pth", 260,
           false, "tf_efficientnet_b2.aa_in1k"),
      timm("tf_efficientnet_b3_aa", "b3", "rwightman", "tf_efficientnet_b3_aa-84b4657e.pth", 300,
           false, "tf_efficientnet_b3.aa_in1k"),
      timm("tf_efficientnet_b4_aa", "b4", "rwightman", "tf_efficientnet_b4_aa-818f208c.pth", 380,
           false, "tf_efficientnet_b4.aa_in1k"),
      timm("tf_efficientnet_b5_aa", "b5", "huggingface", "tf_efficientnet_b5_aa-99018a74.pth", 456,
           false, "tf_efficientnet_b5.aa_in1k"),
      timm("tf_efficientnet_b6_aa", "b6", "rwightman", "tf_efficientnet_b6_aa-80ba17e4.pth", 528,
           false, "tf_efficientnet_b6.aa_in1k"),
      timm("tf_efficientnet_b7_aa", "b7", "huggingface", "tf_efficientnet_b7_aa-076e3472.pth", 600,
           false, "tf_efficientnet_b7.aa_in1k"),
      timm("tf_efficientnet_b0_ap", "b0", "rwightman", "tf_efficientnet_b0_ap-f262efe1.pth", 224,
           true, "tf_efficientnet_b0.ap_in1k"),
      timm("tf_efficientnet_b1_ap", "b1", "rwightman", "tf_efficientnet_b1_ap-44ef0a3d.pth", 240,
           true, "tf_efficientnet_b1.ap_in1k"),
      timm("tf_efficientnet_b2_ap", "b2", "rwightman", "tf_efficientnet_b2_ap-2f8e7636.pth", 260,
           true, "tf_efficientnet_b2.ap_in1k"),
      timm("tf_efficientnet_b3_ap", "b3", "rwightman", "tf_efficientnet_b3_ap-aad25bdd.pth", 300,
           true, "tf_efficientnet_b3.ap_in1k"),
      timm("tf_efficientnet_b4_ap", "b4", "rwightman", "tf_efficientnet_b4_ap-dedb23e6.pth", 380,
           true, "tf_efficientnet_b4.ap_in1k"),
      timm("tf_efficientnet_b5_ap", "b5", "rwightman", "tf_efficientnet_b5_ap-9e82fae8.pth", 456,
           true, "tf_efficientnet_b5.ap_in1k"),
      timm("tf_efficientnet_b6_ap", "b6", "rwightman", "tf_efficientnet_b6_ap-4ffb161f.pth", 528,
           true, "tf_efficientnet_b6.ap_in1k"),
      timm("tf_efficientnet_b7_ap", "b7", "rwightman", "tf_efficientnet_b7_ap-ddb28fec.pth", 600,
           true, "tf_efficientnet_b7.ap_in1k"),
      timm("tf_efficientnet_b8_ap", "b8", "rwightman", "tf_efficientnet_b8_ap-00e169fa.pth", 672,
           true, "tf_efficientnet_b8.ap_in1k"),
      timm("tf_efficientnet_b0_ns", "b0", "rwightman", "tf_efficientnet_b0_ns-c0e6a31c.pth", 224,
           false, "tf_efficientnet_b0.ns_jft_in1k"),
      timm("tf_efficientnet_b1_ns", "b1", "rwightman", "tf_efficientnet_b1_ns-99dd0c41.pth", 240,
           false, "tf_efficientnet_b1.ns_jft_in1k"),
      timm("tf_efficientnet_b2_ns", "b2", "rwightman", "tf_efficientnet_b2_ns-00306e48.pth", 260,
           false, "tf_efficientnet_b2.ns_jft_in1k"),
      timm("tf_efficientnet_b3_ns", "b3", "rwightman", "tf_efficientnet_b3_ns-9d44bf68.pth", 300,
           false, "tf_efficientnet_b3.ns_jft_in1k"),
      timm("tf_efficientnet_b4_ns", "b4", "rwightman", "tf_efficientnet_b4_ns-d6313a46.pth", 380,
           false, "tf_efficientnet_b4.ns_jft_in1k"),
      timm("tf_efficientnet_b5_ns", "b5", "rwightman", "tf_efficientnet_b5_ns-6f26d0cf.pth", 456,
           false, "tf_efficientnet_b5.ns_jft_in1k"),
      timm("tf_efficientnet_b6_ns", "b6", "rwightman", "tf_efficientnet_b6_ns-51548356.pth", 528,
           false, "tf_efficientnet_b6.ns_jft_in1k"),
      timm("tf_efficientnet_b7_ns", "b7", "rwightman", "tf_efficientnet_b7_ns-1dbc32de.pth", 600,
           false, "tf_efficientnet_b7.ns_jft_in1k"),
      timm("tf_efficientnet_l2_ns", "l2", "rwightman", "tf_efficientnet_l2_ns-df73bb44.pth", 800,
           false, "tf_efficientnet_l2.ns_jft_in1k"),
      timm("tf_efficientnet_l2_ns_475", "l2", "rwightman", "tf_efficientnet_l2_ns_475-bebbd00a.pth",
           475, false, "tf_efficientnet_l2.ns_jft_in1k_475"),
      timm("tf_efficientnet_b5_ra", "b5", "rwightman", "tf_efficientnet_b5_ra-9a3e5369.pth", 456,
           false, "tf_efficientnet_b5.ra_in1k"),
      timm("tf_efficientnet_b7_ra", "b7", "rwightman", "tf_efficientnet_b7_ra-6c08e654.pth", 600,
           false, "tf_efficientnet_b7.ra_in1k"),
      timm("tf_efficientnet_b8_ra", "b8", "rwightman", "tf_efficientnet_b8_ra-572d5dd9.pth", 672,
           false, "tf_efficientnet_b8.ra_in1k"),
  };
}

}  // namespace

std::optional<EfficientNetConfig> efficientNetConfig(const std::string& name) {
  bool tf = false;
  const EnVariant* var = enMatchVariant(name, &tf);
  if (!var) return std::nullopt;
  EfficientNetConfig c;
  c.name = enCanonicalName(tf, *var);
  c.widthMultiplier = var->width;
  c.depthMultiplier = var->depth;
  c.tfSame = tf;
  c.defaultSize = var->size;
  c.defaultDropRate = var->dropRate;
  return c;
}

const ArchitectureFamily& efficientNetFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "efficientnet";
    f.names = enNames();
    f.namesNote = "EfficientNets also with timm's weight suffixes, e.g. tf_efficientnet_b0_ap";
    f.find = findEfficientNet;
    f.create = createEfficientNet;
    f.finetune = efficientNetRecipe;
    f.published = efficientNetPublished;
    f.foreignLayout = KeyLayout{"torchvision", enIsTorchvisionLayout, enFromTorchvision,
                                enToTorchvision, enAdoptTorchvision};
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
