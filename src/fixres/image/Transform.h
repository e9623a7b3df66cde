// The FixRes preprocessing sets with torchvision 0.14 semantics and
// per-sample randomness: `torch` and `full` (train), `val` (resize + center crop), `val-nocrop`,
// `v2-train` (FixRes transforms_v2 val_train) and `v2-test`. A Transform turns encoded bytes (or
// a decoded image) into the final RGB uint8 image, then writes it as normalised float32 or
// uint8 CHW. Geometric operations are PIL's antialiased bilinear resize, bit-exact.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "fixres/common/Choice.h"
#include "fixres/image/AutoAugment.h"
#include "fixres/image/Decode.h"
#include "fixres/image/Image.h"
#include "fixres/image/RandomErasing.h"
#include "fixres/image/Resample.h"

namespace fixres::image {

class Rng;

enum class TransformKind { kTorch, kFull, kVal, kValNoCrop, kV2Train, kV2Test };
// kFixres: FixRes's Resize, height := size, width := int(size * w / h) whatever the orientation
// (portrait images then get black bars from the center crop); kShorter: torchvision's Resize(int).
enum class ResizeMode { kFixres, kShorter };

struct TransformOptions {
  TransformKind kind = TransformKind::kVal;
  int inputSize = 224;  // S: output side (train crop or test resolution)
  // The val transforms' centre crop as a fraction of the resized side: S is cut from
  // floor(S / cropPct) (timm's crop_pct). 0.875 is FixRes's int((256 / 224) * S), equal for every
  // S.
  double cropPct = 0.875;
  ResizeMode resizeMode = ResizeMode::kFixres;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  // Additions beyond the named sets (defaults keep the reference behaviour):
  Filter filter = Filter::kBilinear;
  float hue = 0.0f;  // hue jitter range [-hue, hue] added to the ColorJitter of full/v2-train
  float lightingStd = 0.0f;   // PCA lighting noise (reference code has it, unused): 0 = off
  bool croppedDecode = true;  // JPEG region decoding for RandomResizedCrop (identical pixels)
  int64_t maxPixels = kDefaultMaxPixels;
  // torchvision references' ClassificationPresetTrain additions, train kinds only (torch, full,
  // v2-train): an automatic augmentation policy on the final uint8 image (after the crop, the
  // flip and the colour jitter), and RandomErasing with this probability on the normalised
  // float output (0: off).
  AutoAugmentKind autoAugment = AutoAugmentKind::kNone;
  int raMagnitude = 9;
  int augmixSeverity = 3;
  double randomErase = 0.0;
};

// torch, full, val, val-nocrop, v2-train, v2-test (aliases: val-crop, val_train, val_test).
const ChoiceTable<TransformKind>& transformKinds();
// fixres, shorter.
const ChoiceTable<ResizeMode>& resizeModes();
// --interpolation: the resize filter (bilinear, the reference's; bicubic, timm's recipes).
const ChoiceTable<Filter>& interpolations();
// The tables above; UsageError naming --transform / --resize-mode and listing the valid names.
TransformKind parseTransformKind(const std::string& name);
std::string transformKindName(TransformKind kind);
ResizeMode parseResizeMode(const std::string& name);

// The side the val transforms resize to before their centre crop of S: floor(S / cropPct), as
// timm's transforms_factory (scale_size). At 0.875 it equals the reference's int((256 / 224) * S)
// for every S up to 4999 (224 -> 256, 384 -> 438).
int valResizeSize(int inputSize, double cropPct = 0.875);
// FixRes Resize target (width, height): largest=false: (int(size * w / h), size); largest=true
// and landscape (h < w): (size, int(size * h / w)). A side that would be 0 (an image more than
// `size` times taller than wide) is 1, where the reference's PIL resize fails.
std::array<int, 2> fixresResizeSize(int width, int height, int size, bool largest);
// torchvision Resize(size) for an int size: the shorter side becomes size.
std::array<int, 2> shorterSideResizeSize(int width, int height, int size);

// torchvision RandomResizedCrop.get_params: 10 attempts at scale x ratio (log-uniform), then the
// center fallback clamped to the ratio range.
Rect sampleResizedCrop(int width, int height, Rng& rng, double scaleMin = 0.08,
                       double scaleMax = 1.0, double ratioMin = 3.0 / 4.0,
                       double ratioMax = 4.0 / 3.0);

// torchvision ColorJitter.get_params: factors uniform in [max(0, 1 - x), 1 + x] (hue in
// [-h, h]), applied in a random order; float32 factors as torch draws them.
struct JitterParams {
  std::array<int, 4> order{0, 1, 2, 3};  // 0 brightness, 1 contrast, 2 saturation, 3 hue
  bool useBrightness = false, useContrast = false, useSaturation = false, useHue = false;
  float brightness = 1.0f, contrast = 1.0f, saturation = 1.0f, hue = 0.0f;
};
JitterParams sampleColorJitter(Rng& rng, float brightness, float contrast, float saturation,
                               float hue = 0.0f);
// Applies the adjustments in params.order, bit-exact with torchvision/PIL. Brightness and contrast
// are per-value maps: they are composed and applied in one go when another operation needs the
// pixels; with `deferred`, the trailing map is returned there instead of being applied (the caller
// folds it into the final conversion).
void applyColorJitter(Image& im, const JitterParams& params,
                      std::array<uint8_t, 256>* deferred = nullptr);

// The result of a transform before the conversion to CHW: `flip` is a pending horizontal flip
// (applied while writing, which is cheaper than flipping the pixels).
struct TransformedImage {
  Image image;
  bool flip = false;
  bool hasValueMap = false;           // a per-value map still to apply (deferred jitter)
  std::array<uint8_t, 256> valueMap;  // valid when hasValueMap
  std::array<float, 3> lightingAlpha{0.0f, 0.0f, 0.0f};
  EraseBox erase;  // RandomErasing's box, applied by writeFloat (writeUint8 refuses one)
};

class Transform {
 public:
  explicit Transform(TransformOptions options);  // UsageError for an invalid option
  const TransformOptions& options() const { return options_; }
  // Side of every output (S), or 0 for kValNoCrop whose outputs vary in size.
  int outputSize() const;
  bool isRandom() const;

  // Decodes `data` (name used in errors: DataError) and transforms it; `seed` drives every random
  // choice (see sampleSeed in Rng.h).
  TransformedImage apply(const uint8_t* data, size_t size, const std::string& name,
                         uint64_t seed) const;
  // The same on an already decoded image.
  TransformedImage apply(const Image& decoded, uint64_t seed) const;

  // 3 x H x W outputs for t.image (H x W), normalised float32 or raw uint8.
  void writeFloat(const TransformedImage& t, float* out) const;
  void writeUint8(const TransformedImage& t, uint8_t* out) const;

 private:
  template <typename Source>
  TransformedImage run(Source& source, uint64_t seed) const;
  TransformOptions options_;
};

}  // namespace fixres::image
