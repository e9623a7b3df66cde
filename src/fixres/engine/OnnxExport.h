// `fixres export --format onnx`: the model's eval-mode graph (models/GraphWriter.h) as an ONNX
// model (opset 13, 18 with --dynamic-size; IR 8) written by fixres's own encoder (OnnxModel.h) and
// checked for the checker's structural rules, at a fixed test resolution with a dynamic batch axis
// (and dynamic height and width on request), the test-time preprocessing in metadata_props. Every
// build has it: no protobuf or ONNX library is linked, so the PyTorch wheel's LibTorch (which
// carries a protobuf of its own) exports the same bytes as Debian's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fixres/engine/ModelCard.h"
#include "fixres/models/Model.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {

// Writes `model` (put in eval mode) to `path` (atomic; OutputError on a write failure) at
// card.testSize x card.testSize, with "batch" as the first input dimension and, with
// dynamicSize, "height" and "width" as the last two. metadata_props: fixres.preprocessing (the
// card's test preprocessing record as JSON: size, crop, resize rule, filter, mean, std), the class
// names (JSON) and the license. UsageError before anything is written when the family cannot
// describe its graph. A model whose message would pass protobuf's 2 GiB, or any with externalData,
// keeps its tensors of 1 KiB or more in `path`.data beside it (ONNX's external data, a location
// relative to the model, offsets aligned to 4 KiB), written before the model; otherwise a
// `path`.data an earlier export left is removed. Returns the number of graph nodes.
size_t exportOnnx(models::ModelImpl& model, const ModelCard& card, const std::string& path,
                  bool dynamicSize, bool externalData = false);

// The metadata_props an export carries: fixres.preprocessing (JSON: the card's test
// preprocessing record, Preprocessing::toJson, with the input and output layouts),
// fixres.architecture, fixres.class_names (JSON, when known), license (when given).
std::vector<std::pair<std::string, std::string>> onnxMetadata(const ModelCard& card,
                                                              bool dynamicSize);

// The same model for a reader in this process (OpenVINO: OpenVinoModel.h), with the embedding
// (the classifier's input) as a second output where the logits are one Gemm's output when
// withEmbedding: its bytes, or, when they would pass protobuf's 2 GiB (or with `viaFile`),
// model.onnx with its tensors in ONNX's external data (model.onnx.data) in a new folder under the
// system's temporary folder (OnnxSource::scratch, the caller's to remove). UsageError as
// exportOnnx; OutputError naming the file that cannot be written (a full disk). `nodes`, when
// given, receives the number of graph nodes.
OnnxSource onnxSource(models::ModelImpl& model, const ModelCard& card, bool dynamicSize,
                      bool withEmbedding, bool viaFile = false, size_t* nodes = nullptr);

}  // namespace fixres::engine
