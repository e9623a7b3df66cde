// A model run by OpenVINO (--runtime openvino): the LibTorch model it was built from describes its
// graph once per input size (OnnxExport.h, in memory, with the embedding as a second output where
// the model has one), OpenVINO compiles it for the CPU at the run's precision, and every forward
// pass runs there. To the jobs (eval, predict, extract, sweep) it is a models::Model like any
// other: the family, classifier and parameters are the LibTorch model's.
#pragma once

#include <string>

#include "fixres/engine/Precision.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

// `base` (its weights loaded, on the CPU) run by OpenVINO at `precision` with the intra-op thread
// count. UsageError when the family cannot describe its graph (naming `architecture`); the
// errors of compileOpenVino (OpenVinoSession.h) at the first forward pass of each size.
models::Model openVinoModel(models::Model base, const std::string& architecture,
                            Precision precision);

}  // namespace fixres::engine
