// The test-time preprocessing record: what a model's images are made into before it sees them
// (timm's pretrained_cfg resolved by resolve_data_config, in one value). Resolved once per job
// (engine/ModelResolution: the flags given, else the model folder's, else the architecture's and
// FixRes's defaults) and handed unchanged to the CPU transform, the GPU transform, the model card
// and timm-hub config.json, the ONNX and OpenVINO metadata, calibration and each sweep cell. No
// command reads the crop fraction or the resize rule itself.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"
#include "fixres/image/Transform.h"

namespace fixres::engine {

// FixRes's test crop: S of int(S * 256 / 224).
inline constexpr double kFixresCropPct = 0.875;
// Centre-crop fractions (--crop-pct, a model folder's crop_pct and test_crop_pct).
inline constexpr Range kCropFractions = Range::reals(0.05, 1);
// --resize-mode, one row: a run's setting (config.json resize_mode) and the inference commands'
// request (ModelRequest, where a model folder's rule applies unless it is given).
inline constexpr CommandHelp kResizeModeHelp[] = {
    {"eval,predict,extract,calibrate,export",
     "Val resize: fixres (height set, the reference) or shorter (torchvision; default: a model "
     "folder's resize rule, else fixres)"},
    {nullptr, nullptr}};
inline constexpr Setting kResizeModeRow{
    "resize_mode",
    "--resize-mode",
    "Data",
    "Val resize: fixres (height set, the reference) or shorter (torchvision)",
    {},
    SettingRole::kCompared,
    "",
    "",
    kResizeModeHelp};

struct Preprocessing {
  std::vector<int> sizes{224};  // the test sizes S, the first the model's own (never empty)
  // The centre crop's fraction of the resized side: S is cut from floor(S / cropPct) (timm's
  // crop_pct; 0.875 is FixRes's 224 of 256).
  double cropPct = kFixresCropPct;
  // fixres: the height becomes floor(S / cropPct), the width follows (FixRes's Resize); shorter:
  // the shorter side does (timm's and torchvision's).
  image::ResizeMode resizeMode = image::ResizeMode::kFixres;
  image::Filter filter = image::Filter::kBilinear;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet's
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  // One model takes every size (a position embedding resampled per input, a graph exported with
  // dynamic height and width): true where the sizes differ.
  bool dynamicSize = false;

  int size() const { return sizes.front(); }
  // The transform `kind` at `size` with this record's crop, rule, filter and normalisation: the
  // CPU transform (image::Transform) and the GPU's (data::DeviceTransform) take it unchanged.
  image::TransformOptions transform(image::TransformKind kind, int size) const;
  image::TransformOptions valTransform(int size) const {
    return transform(image::TransformKind::kVal, size);
  }
  // As an ONNX model's and an OpenVINO IR's fixres.preprocessing metadata: input_size S,
  // dynamic_size, crop_pct, crop_mode, resize_mode, resize_rule, interpolation, mean, std.
  nlohmann::ordered_json toJson() const;
  // The resize rule in words, as the metadata and a hub config.json's fixres.resize_rule say it.
  std::string resizeRule() const;
};

}  // namespace fixres::engine
