// `fixres export`: a model's weights written in the layout another tool loads strictly — the
// FixRes reference's ({'model': {'module.' + name: tensor}}), torchvision's or timm's bare state
// dict.
#pragma once

#include <string>

#include "fixres/common/Choice.h"
#include "fixres/models/Model.h"

namespace fixres::engine {

enum class ExportLayout { kFixres, kTorchvision, kTimm };
const ChoiceTable<ExportLayout>& exportLayouts();  // fixres, torchvision, timm

// Writes `model`'s parameters and buffers in `layout` to `path` (atomic: OutputError, exit 6, on
// a write failure, `path` untouched). fixres's names are timm's, and torchvision's for a family
// that says so (ArchitectureFamily::torchvisionNames: the ResNets); for the torchvision format
// the others are renamed by their family's torchvision layout (EfficientNet's features.*).
// UsageError, before anything is written, when torchvision has no such architecture
// (tf_efficientnet_*, PNASNet). Returns the number of tensors written.
size_t exportWeights(models::ModelImpl& model, ExportLayout layout, const std::string& path);

}  // namespace fixres::engine
