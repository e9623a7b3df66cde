// Architecture table: torchvision's ResNet family plus FixRes's names and a tiny demo model,
// timm's EfficientNets and PNASNet-5-Large.
#include "fixres/models/Registry.h"

#include <utility>

#include "fixres/common/Error.h"
#include "fixres/models/EfficientNet.h"
#include "fixres/models/PNASNet.h"

namespace fixres::models {
namespace {

struct Entry {
  const char* name;
  const char* aliasOf;  // nullptr for canonical names
  bool bottleneck;
  std::array<int64_t, 4> layers;
  int64_t groups;
  int64_t widthPerGroup;
};

// torchvision's definitions (resnet.py): block type, blocks per stage, groups, width per group.
const std::vector<Entry>& table() {
  static const std::vector<Entry> kTable = {
      {"resnet18", nullptr, false, {2, 2, 2, 2}, 1, 64},
      {"resnet34", nullptr, false, {3, 4, 6, 3}, 1, 64},
      {"resnet50", nullptr, true, {3, 4, 6, 3}, 1, 64},
      {"resnet101", nullptr, true, {3, 4, 23, 3}, 1, 64},
      {"resnet152", nullptr, true, {3, 8, 36, 3}, 1, 64},
      {"resnext50_32x4d", nullptr, true, {3, 4, 6, 3}, 32, 4},
      {"resnext101_32x8d", nullptr, true, {3, 4, 23, 3}, 32, 8},
      {"resnext101_32x48d", nullptr, true, {3, 4, 23, 3}, 32, 48},
      {"wide_resnet50_2", nullptr, true, {3, 4, 6, 3}, 1, 128},
      {"resnet_tiny", nullptr, false, {1, 1, 1, 1}, 1, 64},
      // FixRes names.
      {"ResNet50", "resnet50", true, {3, 4, 6, 3}, 1, 64},
      {"IGAM_Resnext101_32x48d", "resnext101_32x48d", true, {3, 4, 23, 3}, 32, 48},
  };
  return kTable;
}

constexpr const char* kPNASNetName = "pnasnet5large";

// timm's name and FixRes's.
bool isPNASNet(const std::string& name) {
  return name == kPNASNetName || name == "PNASNet";
}

const Entry* findResNet(const std::string& name) {
  for (const auto& e : table())
    if (name == e.name) return &e;
  return nullptr;
}

std::string knownList() {
  std::string s;
  for (const auto& n : knownArchitectures()) s += (s.empty() ? "" : ", ") + n;
  return s + " (EfficientNets also with timm's weight suffixes, e.g. tf_efficientnet_b0_ap)";
}

[[noreturn]] void unknown(const std::string& name) {
  FIXRES_CHECK(name != "EfficientNet", UsageError,
               "architecture 'EfficientNet' needs the model named by --EfficientNet-models "
               "(e.g. tf_efficientnet_b0_ap)");
  FIXRES_FAIL(UsageError, "unknown architecture '", name, "'; known: ", knownList());
}

void checkClasses(int64_t numClasses) {
  FIXRES_CHECK(numClasses >= 1, UsageError, "number of classes must be at least 1, got ",
               numClasses);
}

}  // namespace

std::vector<std::string> knownArchitectures() {
  std::vector<std::string> names;
  for (const auto& e : table())
    if (!e.aliasOf) names.emplace_back(e.name);
  for (const auto& n : efficientNetNames()) names.push_back(n);
  names.emplace_back(kPNASNetName);
  for (const auto& e : table())
    if (e.aliasOf) names.emplace_back(e.name);
  names.emplace_back("PNASNet");
  return names;
}

ArchInfo architectureInfo(const std::string& name) {
  ArchInfo info;
  if (const Entry* e = findResNet(name)) {
    info.name = e->aliasOf ? e->aliasOf : e->name;
    info.family = Family::kResNet;
    info.outputStride = info.name == "resnet_tiny" ? 8 : 32;
    return info;
  }
  if (auto c = efficientNetConfig(name)) {
    info.name = c->name;
    info.family = Family::kEfficientNet;
    info.defaultSize = c->defaultSize;
    return info;
  }
  if (isPNASNet(name)) {
    info.name = kPNASNetName;
    info.family = Family::kPNASNet;
    info.defaultSize = 331;
    info.mean = {0.5f, 0.5f, 0.5f};  // the TensorFlow model's inputs in [-1, 1]
    info.std = {0.5f, 0.5f, 0.5f};
    return info;
  }
  unknown(name);
}

ResNetConfig modelConfig(const std::string& name, int64_t numClasses) {
  checkClasses(numClasses);
  const Entry* e = findResNet(name);
  if (!e) {
    architectureInfo(name);  // names the problem for unknown names
    FIXRES_FAIL(UsageError, "'", name, "' is not a ResNet-family architecture");
  }
  ResNetConfig c;
  c.name = e->aliasOf ? e->aliasOf : e->name;
  c.bottleneck = e->bottleneck;
  c.layers = e->layers;
  c.groups = e->groups;
  c.widthPerGroup = e->widthPerGroup;
  c.numClasses = numClasses;
  if (c.name == "resnet_tiny") {
    // Basic blocks [1,1,1,1], widths 16/32/64/128, small-image stem: ~0.7M parameters.
    c.widths = {16, 32, 64, 128};
    c.smallStem = true;
  }
  return c;
}

Model createModel(const std::string& name, const ModelOptions& options) {
  checkClasses(options.numClasses);
  if (findResNet(name)) return std::make_shared<ResNetImpl>(modelConfig(name, options.numClasses));
  if (auto c = efficientNetConfig(name)) {
    c->options = options;
    return std::make_shared<EfficientNetImpl>(*c);
  }
  if (isPNASNet(name)) return std::make_shared<PNASNetImpl>(options);
  unknown(name);
}

Model createModel(const std::string& name, int64_t numClasses) {
  ModelOptions o;
  o.numClasses = numClasses;
  return createModel(name, o);
}

int outputStride(const std::string& name) {
  return architectureInfo(name).outputStride;
}

}  // namespace fixres::models
