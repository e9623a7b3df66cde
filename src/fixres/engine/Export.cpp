// Weight export in the reference's, torchvision's and timm's layouts.
#include "fixres/engine/Export.h"

#include <ATen/core/Dict.h>

#include <algorithm>
#include <filesystem>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/FolderLock.h"
#include "fixres/common/JsonInput.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/engine/OpenVinoModel.h"
#include "fixres/models/Family.h"
#include "fixres/models/WeightIO.h"
#include "fixres/weights/SafetensorsFile.h"

namespace fixres::engine {
namespace {

// `model`'s `key` in torchvision's layout: its own name when its family's names are torchvision's,
// else its family's foreign layout's when that is torchvision's; "" when torchvision has no such
// model.
std::string torchvisionKeyOf(const models::ModelImpl& model, const std::string& key) {
  const models::ArchitectureFamily& family = model.family();
  if (family.torchvisionNames) return key;
  const auto& foreign = family.foreignLayout;
  if (foreign && foreign->name == "torchvision") return foreign->fromOwn(model, key);
  return "";
}

}  // namespace

const ChoiceTable<ExportLayout>& exportLayouts() {
  static const ChoiceTable<ExportLayout> kTable = {"weight format",
                                                   {{"fixres", ExportLayout::kFixres},
                                                    {"torchvision", ExportLayout::kTorchvision},
                                                    {"timm", ExportLayout::kTimm},
                                                    {"timm-hub", ExportLayout::kTimmHub},
                                                    {"onnx", ExportLayout::kOnnx},
                                                    {"openvino", ExportLayout::kOpenVino}}};
  return kTable;
}

size_t exportModel(models::ModelImpl& model, ExportLayout layout, const ModelCard& card,
                   const std::string& out, bool dynamicSize, bool externalData) {
  if (layout == ExportLayout::kTimmHub) return exportTimmHub(model, card, out);
  if (layout == ExportLayout::kOnnx) return exportOnnx(model, card, out, dynamicSize, externalData);
  if (layout == ExportLayout::kOpenVino) return exportOpenVino(model, card, out, dynamicSize);
  return exportWeights(model, layout, out);
}

size_t exportWeights(models::ModelImpl& model, ExportLayout layout, const std::string& path) {
  FIXRES_CHECK(layout != ExportLayout::kTimmHub && layout != ExportLayout::kOnnx &&
                   layout != ExportLayout::kOpenVino,
               InternalError, "timm-hub, onnx and openvino are not state dicts");
  auto sd = models::stateDict(model);
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& e : sd) {
    std::string name = e.key();
    if (layout == ExportLayout::kFixres) {
      name = "module." + name;  // the reference loads a DistributedDataParallel model's names
    } else if (layout == ExportLayout::kTorchvision) {
      name = torchvisionKeyOf(model, e.key());
      FIXRES_CHECK(!name.empty(), UsageError,
                   "--format torchvision: torchvision has no such architecture (its "
                   "EfficientNets are efficientnet_b0 ... b7; no tf_efficientnet_*, no PNASNet); "
                   "use --format timm or fixres");
    }
    out.insert(name, e.value());
  }
  if (layout == ExportLayout::kFixres) {
    c10::impl::GenericDict top(c10::StringType::get(), c10::AnyType::get());
    top.insert("model", out);
    models::writeTorchFile(path, c10::IValue(top));
  } else {
    models::writeTorchFile(path, c10::IValue(out));
  }
  return out.size();
}

size_t exportTimmHub(models::ModelImpl& model, const ModelCard& card, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::symlink_status(dir, ec);
  if (fs::exists(status)) {
    FIXRES_CHECK(fs::is_directory(status), UsageError, "--out ", dir,
                 " exists and is not a folder (timm-hub writes a folder: name a new or empty one)");
    std::string why;
    const auto names = folderEntries(dir, &why);
    FIXRES_CHECK(why.empty(), UsageError, "--out ", dir, ": cannot list folder: ", why);
    const bool interrupted = std::any_of(names.begin(), names.end(), isAtomicTemporaryName);
    FIXRES_CHECK(names.empty(), UsageError, "--out ", dir, " is not empty: it holds ",
                 entriesText(names),
                 interrupted ? " (a write there was interrupted: remove the folder or its "
                               "contents and export again)"
                             : "",
                 "; timm-hub writes a new or empty folder, and nothing was changed");
  }
  const auto config = timmHubConfig(card, model);  // before any file: its errors write nothing
  makeDirectories(dir);
  const auto sd = models::stateDict(model);
  models::writeSafetensorsFile(dir + "/model.safetensors", sd, {{"format", "pt"}});
  writeFileAtomic(dir + "/config.json", jsonText(config, 2) + "\n");
  return sd.size();
}

}  // namespace fixres::engine
