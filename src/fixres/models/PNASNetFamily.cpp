// The PNASNet family's registration: timm's pnasnet5large (FixRes's PNASNet), the preprocessing of
// the TensorFlow weights.
#include <memory>
#include <optional>
#include <string>

#include "fixres/models/Family.h"
#include "fixres/models/PNASNet.h"

namespace fixres::models {
namespace {

constexpr const char* kPNASNetName = "pnasnet5large";

// Trained at 331 px; the TensorFlow model's inputs in [-1, 1].
std::optional<ArchInfo> findPNASNet(const std::string& name) {
  if (name != kPNASNetName && name != "PNASNet") return std::nullopt;  // timm's name, FixRes's
  ArchInfo info;
  info.name = kPNASNetName;
  info.defaultSize = 331;
  info.mean = {0.5f, 0.5f, 0.5f};
  info.std = {0.5f, 0.5f, 0.5f};
  return info;
}

Model createPNASNet(const std::string& /*name*/, const ModelOptions& options) {
  return std::make_shared<PNASNetImpl>(options);
}

}  // namespace

const ArchitectureFamily& pnasnetFamily() {
  static const ArchitectureFamily kFamily = [] {
    ArchitectureFamily f;
    f.name = "pnasnet";
    f.names = {kPNASNetName};
    f.aliases = {"PNASNet"};
    f.find = findPNASNet;
    f.create = createPNASNet;
    return f;
  }();
  return kFamily;
}

}  // namespace fixres::models
