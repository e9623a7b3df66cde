// The test-time preprocessing record's derived forms: a transform, the resize rule, metadata.
#include "fixres/runtime/Preprocessing.h"

#include "fixres/common/Choice.h"
#include "fixres/common/NumberText.h"

namespace fixres::engine {

image::TransformOptions Preprocessing::transform(image::TransformKind kind, int size) const {
  image::TransformOptions t;
  t.kind = kind;
  t.inputSize = size;
  t.cropPct = cropPct;
  t.resizeMode = resizeMode;
  t.mean = mean;
  t.std = std;
  t.filter = filter;
  return t;
}

std::string Preprocessing::resizeRule() const {
  return resizeMode == image::ResizeMode::kFixres
             ? "height := int(S / crop_pct), width := int(height * w / h)"
             : "shorter side := int(S / crop_pct)";
}

nlohmann::ordered_json Preprocessing::toJson() const {
  const auto triple = [](const std::array<float, 3>& v) {
    return nlohmann::ordered_json::array(
        {shortestDouble(v[0]), shortestDouble(v[1]), shortestDouble(v[2])});
  };
  return {{"input_size", size()},
          {"dynamic_size", dynamicSize},
          {"crop_pct", cropPct},
          {"crop_mode", "center"},
          {"resize_mode", choiceName(image::resizeModes(), resizeMode)},
          {"resize_rule", resizeRule()},
          {"interpolation", choiceName(image::interpolations(), filter)},
          {"mean", triple(mean)},
          {"std", triple(std)}};
}

}  // namespace fixres::engine
