// The device half of --decode-on gpu's transforms.
#include "fixres/data/DeviceTransform.h"

#include <algorithm>

#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Rng.h"

namespace fixres::data {
namespace {

namespace F = torch::nn::functional;

// Bilinear, antialiased when shrinking, rounded back to uint8 values (kept in float).
torch::Tensor resizeRounded(const torch::Tensor& chw, int width, int height) {
  auto x = chw.unsqueeze(0).to(torch::kFloat);
  x = F::interpolate(x, F::InterpolateFuncOptions()
                            .size(std::vector<int64_t>{height, width})
                            .mode(torch::kBilinear)
                            .align_corners(false)
                            .antialias(true));
  return x.squeeze(0).round_().clamp_(0, 255);
}

}  // namespace

torch::Tensor imageToChw(const image::Image& im) {
  return torch::from_blob(const_cast<uint8_t*>(im.pixels.data()), {im.height, im.width, 3},
                          torch::kUInt8)
      .permute({2, 0, 1})
      .contiguous();
}

std::string whyNoDevicePath(const image::TransformOptions& o) {
  using image::TransformKind;
  if (o.kind != TransformKind::kTorch && o.kind != TransformKind::kVal)
    return "only the torch and val transforms have a GPU path (colour jitter, v2 and val-nocrop "
           "stay on the CPU)";
  if (o.filter != image::Filter::kBilinear) return "only bilinear resizing has a GPU path";
  if (o.autoAugment != image::AutoAugmentKind::kNone || o.randomErase > 0 || o.lightingStd > 0)
    return "augmentation policies, random erasing and lighting run on the CPU";
  return "";
}

DevicePlan planDeviceSample(const image::TransformOptions& o, int width, int height,
                            uint64_t seed) {
  const std::string why = whyNoDevicePath(o);
  FIXRES_CHECK(why.empty(), UsageError, "--decode-on gpu: ", why);
  DevicePlan p;
  p.size = o.inputSize;
  image::Rng rng(seed);  // the draws of Transform::run, in its order
  if (o.kind == image::TransformKind::kTorch) {
    p.crop = image::sampleResizedCrop(width, height, rng);
    p.flip = rng.uniform() < 0.5;
    return p;
  }
  const int resize = image::valResizeSize(o.inputSize, o.cropPct);
  const auto size = o.resizeMode == image::ResizeMode::kFixres
                        ? image::fixresResizeSize(width, height, resize, false)
                        : image::shorterSideResizeSize(width, height, resize);
  p.resizeWidth = size[0];
  p.resizeHeight = size[1];
  p.centerCrop = image::centerCropRect(size[0], size[1], o.inputSize, o.inputSize);
  return p;
}

torch::Tensor applyDevicePlan(const torch::Tensor& decoded, const DevicePlan& p,
                              const image::TransformOptions& o) {
  torch::NoGradGuard noGrad;
  torch::Tensor out;
  if (p.resizeWidth == 0) {
    const auto region =
        decoded.narrow(1, p.crop.top, p.crop.height).narrow(2, p.crop.left, p.crop.width);
    out = resizeRounded(region, p.size, p.size);
  } else {
    const auto resized = resizeRounded(decoded, p.resizeWidth, p.resizeHeight);
    // The crop window, zeros where it leaves the resized image (PIL's crop).
    out = torch::zeros({3, p.size, p.size}, resized.options());
    const int x0 = std::max(0, p.centerCrop.left), y0 = std::max(0, p.centerCrop.top);
    const int x1 = std::min(p.resizeWidth, p.centerCrop.left + p.size);
    const int y1 = std::min(p.resizeHeight, p.centerCrop.top + p.size);
    if (x1 > x0 && y1 > y0)
      out.narrow(1, y0 - p.centerCrop.top, y1 - y0)
          .narrow(2, x0 - p.centerCrop.left, x1 - x0)
          .copy_(resized.narrow(1, y0, y1 - y0).narrow(2, x0, x1 - x0));
  }
  if (p.flip) out = out.flip({2});
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(decoded.device());
  const auto mean = torch::tensor({o.mean[0], o.mean[1], o.mean[2]}, opts).view({3, 1, 1});
  const auto std = torch::tensor({o.std[0], o.std[1], o.std[2]}, opts).view({3, 1, 1});
  return (out / 255.0f - mean) / std;
}

EncodedSample encodeSample(const RawSample& raw, const image::TransformOptions& o, uint64_t seed) {
  EncodedSample e;
  e.name = raw.name;
  auto keep = [&](const image::Image& im) {
    e.decoded = imageToChw(im);
    e.plan = planDeviceSample(o, im.width, im.height, seed);
  };
  if (raw.isDecoded) {
    keep(raw.decoded);
    return e;
  }
  image::Decoder decoder(raw.data(), raw.size(), raw.name);  // the header only, so far
  if (&decoder.codec() == &image::jpegCodec()) {
    e.jpeg = raw.bytes;
    e.plan = planDeviceSample(o, decoder.width(), decoder.height(), seed);
    return e;
  }
  keep(decoder.decode());
  return e;
}

torch::Tensor transformEncoded(const std::vector<EncodedSample>& samples,
                               const std::vector<torch::Tensor>& jpegs,
                               const image::TransformOptions& o, const torch::Device& device) {
  std::vector<torch::Tensor> out;
  size_t next = 0;
  for (const auto& s : samples) {
    torch::Tensor pixels;
    if (s.jpeg) {
      FIXRES_CHECK(next < jpegs.size(), InternalError, "fewer decoded JPEGs than the batch holds");
      pixels = jpegs[next++];
    } else {
      pixels = s.decoded.to(device, /*non_blocking=*/true);
    }
    out.push_back(applyDevicePlan(pixels, s.plan, o));
  }
  return torch::stack(out);
}

}  // namespace fixres::data
