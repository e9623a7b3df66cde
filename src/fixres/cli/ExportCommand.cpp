// `fixres export`: weights in the layout the FixRes reference, torchvision or timm loads, or a
// timm hub folder carrying the test resolution and the class names.
#include <iostream>
#include <optional>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/engine/OpenVinoModel.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {
namespace {

struct ExportState {
  engine::ModelSpec model;
  engine::ExportOptions output;
  std::optional<int> inputSize;  // none: the model folder's test size, else the architecture's
  std::string out;
  engine::CardOverrides card;
  engine::ModelRequest request;  // its test preprocessing rows (--resize-mode, --crop-pct)
};

}  // namespace

Command addExportCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "export",
      "Write weights (any file --weight-path reads, e.g. a checkpoint, or a run folder) as the "
      "FixRes reference's {'model': {'module.*'}}, torchvision's or timm's state dict, a timm "
      "hub folder with the test resolution, an ONNX model or OpenVINO's IR with the "
      "preprocessing");
  auto s = std::make_shared<ExportState>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  bindSetting(*sub, engine::kUseEmaRow, s->model.useEma);
  engine::ExportOptions::visitSettings(s->output, SettingsBinder{*sub});
  bindSetting(*sub, kOutRow, s->out)->required();
  bindSetting(*sub, engine::kInputSizeRow, s->inputSize);
  bindSetting(*sub, kClassNamesRow, s->card.classNamesFile);
  bindSetting(*sub, kLicenseRow, s->card.license);
  engine::ModelRequest::visitSettings(s->request, SettingsBinder{*sub});
  return {sub, [s, sub]() -> int {
            const bool onnx = s->output.format == engine::ExportLayout::kOnnx;
            const bool openvino = s->output.format == engine::ExportLayout::kOpenVino;
            FIXRES_CHECK(onnx || openvino || !s->output.dynamicSize, UsageError,
                         "--dynamic-size is for --format onnx or openvino");
            FIXRES_CHECK(onnx || !s->output.externalData, UsageError,
                         "--external-data is for --format onnx");
            FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "export needs --weight-path");
            checkOutputPath("--out", s->out, givenInputs(*sub, {"--out"}));
            // An ONNX export may write OUT.data beside it (external data): never over an input.
            if (onnx) checkOutputPath("--out", s->out + ".data", givenInputs(*sub, {"--out"}));
            // OpenVINO's IR: OUT.xml and OUT.bin beside it.
            if (openvino)
              checkOutputPath("--out", engine::openVinoBinPath(s->out),
                              givenInputs(*sub, {"--out"}));
            // Written into metadata that must be UTF-8 (ONNX's protobuf strings, JSON).
            FIXRES_CHECK(validUtf8(s->card.license) == s->card.license, UsageError,
                         "--license must be UTF-8 text, got '", validUtf8(s->card.license), "'");
            // The classifier's size: given, the model folder's, the file's, else ImageNet's.
            if (s->model.numClasses == 0) s->model.numClasses = engine::classifierSizeIn(s->model);
            if (s->model.numClasses == 0) s->model.numClasses = 1000;
            // The test preprocessing, resolved once: what the hub folder and the ONNX and
            // OpenVINO metadata record, and the size the model is built for.
            engine::ModelRequest request = s->request;
            request.spec = s->model;
            if (s->inputSize) request.sizes = {*s->inputSize};
            // A dynamic graph resamples a position embedding from the weights' own grid.
            if (s->output.dynamicSize) request.spec.dynamicImgSize = true;
            engine::ResolvedModel resolved = engine::resolveModel(request, {});
            resolved.assumption.clear();  // what is assumed is what the export records
            const bool hub = s->output.format == engine::ExportLayout::kTimmHub;
            engine::ModelCard card;
            if (hub || onnx || openvino)
              card = engine::exportCard(s->model, resolved.input, s->card);
            engine::RunDevice cpu;
            auto built = engine::buildModel(resolved, s->model.numClasses, cpu);
            size_t n = engine::exportModel(*built.model, s->output.format, card, s->out,
                                           s->output.dynamicSize, s->output.externalData);
            std::cout << "exported " << n << (onnx || openvino ? " nodes of " : " tensors of ")
                      << s->model.architectureName() << " as "
                      << choiceName(engine::exportLayouts(), s->output.format) << " -> " << s->out;
            if (hub || onnx || openvino) std::cout << " (test size " << card.testSize << " px)";
            std::cout << std::endl;
            if (hub && models::isFixresOwn(s->model.architectureName()))
              log::warn(s->model.architectureName(),
                        " is fixres's own demo network, which timm does not have: "
                        "timm.create_model cannot build it from ",
                        s->out, "; fixres reads the folder (predict, eval, export --weight-path)");
            return 0;
          }};
}

}  // namespace fixres::cli
