// The EfficientNet family's registration: timm's names and variants (the paper's scaling and
// resolution), the reference's fine-tuning recipe.
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
};
// The paper's (width, depth, resolution, dropout) per model.
constexpr EnVariant kEnVariants[] = {{"b0", 1.0, 1.0, 224, 0.2}, {"b1", 1.0, 1.1, 240, 0.2},
                                     {"b2", 1.1, 1.2, 260, 0.3}, {"b3", 1.2, 1.4, 300, 0.3},
                                     {"b4", 1.4, 1.8, 380, 0.4}, {"b5", 1.6, 2.2, 456, 0.4},
                                     {"b6", 1.8, 2.6, 528, 0.5}, {"b7", 2.0, 3.1, 600, 0.5},
                                     {"b8", 2.2, 3.6, 672, 0.5}, {"l2", 4.3, 5.3, 800, 0.5}};

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

// The paper's resolution; ImageNet's mean and std (the AdvProp weights' 0.5 is a property of
// those files: models/Catalogue.cpp).
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
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
