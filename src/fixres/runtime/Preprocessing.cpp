// The test-time preprocessing record's derived forms: a transform, a line, metadata.
#include "fixres/runtime/Preprocessing.h"

#include <sstream>

#include "fixres/common/Choice.h"
#include "fixres/common/NumberText.h"

namespace fixres::engine {

Preprocessing Preprocessing::at(int size) const {
  Preprocessing p = *this;
  p.sizes = {size};
  return p;
}

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

std::string Preprocessing::describe() const {
  std::ostringstream s;
  for (size_t i = 0; i < sizes.size(); ++i) s << (i == 0 ? "" : ",") << sizes[i];
  s << " px, crop " << cropPct << ", " << choiceName(image::resizeModes(), resizeMode) << " rule, "
    << choiceName(image::interpolations(), filter) << ", mean " << mean[0] << "," << mean[1] << ","
    << mean[2] << " std " << std[0] << "," << std[1] << "," << std[2];
  return s.str();
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
