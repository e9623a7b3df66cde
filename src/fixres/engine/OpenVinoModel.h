// A model run by OpenVINO (--runtime openvino): the LibTorch model it was built from describes its
// graph once per input size (OnnxExport.h, in memory, with the embedding as a second output where
// the model has one), OpenVINO compiles it for the CPU at the run's precision, and every forward
// pass runs there. To the jobs (eval, predict, extract, sweep) it is a models::Model like any
// other: the family, classifier and parameters are the LibTorch model's.
#pragma once

#include <string>

#include "fixres/engine/ModelCard.h"
#include "fixres/models/Model.h"
#include "fixres/runtime/Precision.h"

namespace fixres::engine {

// `base` (its weights loaded, on the CPU) run by OpenVINO at `precision` with the intra-op thread
// count. UsageError when the family cannot describe its graph (naming `architecture`); the
// errors of compileOpenVino (OpenVinoSession.h) at the first forward pass of each size.
models::Model openVinoModel(models::Model base, const std::string& architecture,
                            Precision precision);

// The .bin beside an IR's `xmlPath`. UsageError, before any work, for a path that does not end
// in .xml and in a build without OpenVINO.
std::string openVinoBinPath(const std::string& xmlPath);

// `export --format openvino`: the model's ONNX graph (OnnxExport.h) at card.testSize (height and
// width dynamic with dynamicSize) converted by OpenVINO to its IR: `xmlPath` and the .bin beside
// it, fp32 weights, the ONNX metadata in the runtime info under "fixres" (preprocessing,
// architecture, class_names, license). UsageError in a build without OpenVINO or for a path that
// does not end in .xml. Returns the number of ONNX graph nodes converted.
size_t exportOpenVino(models::ModelImpl& model, const ModelCard& card, const std::string& xmlPath,
                      bool dynamicSize);

}  // namespace fixres::engine
