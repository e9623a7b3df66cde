// `fixres export`: a model's weights written in the layout another tool loads strictly — the
// FixRes reference's ({'model': {'module.' + name: tensor}}), torchvision's or timm's bare state
// dict.
#pragma once

#include <string>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

enum class ExportLayout { kFixres, kTorchvision, kTimm, kTimmHub, kOnnx, kOpenVino };
// fixres, torchvision, timm, timm-hub, onnx, openvino
const ChoiceTable<ExportLayout>& exportLayouts();
// --format, the row of every command that writes weights (export, calibrate).
inline constexpr Setting kExportFormatSetting{
    "",
    "--format",
    "Output",
    "Layout written: fixres (the reference's loader), torchvision, timm (state dicts), "
    "timm-hub (a folder: model.safetensors and timm's config.json with the test size), onnx "
    "(an ONNX model at the test size with its preprocessing) or openvino (OpenVINO's IR, OUT.xml "
    "and OUT.bin, the preprocessing in its runtime info; builds with OpenVINO)",
    {},
    SettingRole::kInvocation,
    "export,calibrate"};

// What `fixres export` writes, beyond the model and its test settings: its rows, bound by the
// command and listed by `fixres settings`.
struct ExportOptions {
  ExportLayout format = ExportLayout::kFixres;
  bool dynamicSize = false;
  bool externalData = false;

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    v(kExportFormatSetting, o.format, exportLayouts());
    v(Setting{"",
              "--dynamic-size",
              "Output",
              "With --format onnx or openvino: height and width as dynamic axes (else the test "
              "size)",
              {},
              SettingRole::kInvocation,
              "export"},
      o.dynamicSize);
    v(Setting{"",
              "--external-data",
              "Output",
              "With --format onnx: the tensors in OUT.data beside the model (ONNX's external "
              "data, as torch.onnx writes models over 2 GB; chosen by itself over 2 GiB)",
              {},
              SettingRole::kInvocation,
              "export"},
      o.externalData);
  }
};

// Writes `model`'s parameters and buffers in `layout` to `path` (atomic: OutputError, exit 6, on
// a write failure, `path` untouched). fixres's names are timm's, and torchvision's for a family
// that says so (ArchitectureFamily::torchvisionNames: the ResNets); for the torchvision format
// the others are renamed by their family's torchvision layout (EfficientNet's features.*).
// UsageError, before anything is written, when torchvision has no such architecture
// (tf_efficientnet_*, PNASNet). Returns the number of tensors written.
size_t exportWeights(models::ModelImpl& model, ExportLayout layout, const std::string& path);

// Writes `model` in `layout` at `out`: a state dict (exportWeights), a hub folder (exportTimmHub)
// or an ONNX model (OnnxExport.h, dynamic batch; dynamic height and width with dynamicSize);
// `card` gives the hub folder's and the ONNX model's test size and preprocessing. Returns the
// number of tensors (ONNX: nodes). externalData: the ONNX tensors in a file beside the model.
// openvino: the ONNX graph converted by OpenVINO to its IR (out: the .xml; the .bin beside it),
// the ONNX metadata in the IR's runtime info under "fixres" (exportOpenVino, OpenVinoModel.h).
size_t exportModel(models::ModelImpl& model, ExportLayout layout, const ModelCard& card,
                   const std::string& out, bool dynamicSize = false, bool externalData = false);
// A timm hub folder at `dir` (new, or an empty folder; UsageError naming it, before anything is
// written, when it holds anything or is a file): model.safetensors with timm's names, then
// config.json (timmHubConfig(card, model)), each atomic, so a folder with a config.json is whole.
// timm loads it with create_model("local-dir:DIR") or create_model(arch, pretrained=True,
// pretrained_cfg_overlay=dict(file=DIR/model.safetensors)); fixres reads it as --weight-path.
// Returns the number of tensors written.
size_t exportTimmHub(models::ModelImpl& model, const ModelCard& card, const std::string& dir);

}  // namespace fixres::engine
