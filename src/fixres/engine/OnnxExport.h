// `fixres export --format onnx`: the model's eval-mode graph (models/GraphWriter.h) as an ONNX
// model (opset 13) written with ONNX's own protobuf classes and checked by ONNX's checker, at a
// fixed test resolution with a dynamic batch axis (and dynamic height and width on request),
// the test-time preprocessing in metadata_props. Built where ONNX's library is (FIXRES_WITH_ONNX:
// Debian's LibTorch links the same libonnx and libprotobuf; a PyTorch wheel's LibTorch carries a
// protobuf of its own, and that build leaves ONNX out).
#pragma once

#include <string>

#include "fixres/engine/ModelCard.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

// Whether this build writes ONNX.
bool onnxExportBuilt();
// UsageError (exit 2: "--format onnx: this build of fixres has no ONNX export ...") unless it does.
void requireOnnxExport();

// Writes `model` (put in eval mode) to `path` (atomic; OutputError on a write failure) at
// card.testSize x card.testSize, with "batch" as the first input dimension and, with
// dynamicSize, "height" and "width" as the last two. metadata_props: fixres.preprocessing (the
// card's test size, crop, resize rule, interpolation, mean and std as JSON), the class names
// (JSON) and the license. UsageError before anything is written when the family cannot describe
// its graph or this build has no ONNX. Returns the number of graph nodes.
size_t exportOnnx(models::ModelImpl& model, const ModelCard& card, const std::string& path,
                  bool dynamicSize);

}  // namespace fixres::engine
