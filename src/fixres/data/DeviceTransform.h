// The transforms of --decode-on gpu, split where the GPU takes over: the CPU still draws each
// sample's random choices exactly as image::Transform does (the same seed gives the same crop and
// flip), and the device then crops the decoded image, resizes it (bilinear, antialiased: the
// tensor form of torchvision's Resize and RandomResizedCrop, rounded to uint8 as they round), flips
// and normalises it. The kinds a GPU path serves: torch (RandomResizedCrop + flip) and val
// (resize + center crop). PIL-exact is the CPU path's promise, not this one's: the difference
// is measured by tests/unit/data/DeviceTransformTest.cpp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"
#include "fixres/image/Image.h"
#include "fixres/image/Transform.h"

namespace fixres::data {

// One sample's plan, in the decoded image's pixels.
struct DevicePlan {
  image::Rect crop;     // train: the crop to resize to size x size
  int resizeWidth = 0;  // val: the whole image resized to this, then ...
  int resizeHeight = 0;
  image::Rect centerCrop;  // ... this size x size window of it (zeros outside)
  bool flip = false;
  int size = 0;
};

// Whether `o` has a device path (torch or val, bilinear, no colour jitter, policy or erasing):
// "" when it has, else why not.
std::string whyNoDevicePath(const image::TransformOptions& o);
// An RGB image as a uint8 3 x H x W tensor (a copy, on the CPU).
torch::Tensor imageToChw(const image::Image& im);
// The plan of `o` for an image of width x height with the sample's `seed` (as Transform::apply).
// UsageError when whyNoDevicePath(o) is not "".
DevicePlan planDeviceSample(const image::TransformOptions& o, int width, int height, uint64_t seed);
// uint8 3 x H x W (on any device) through `plan`: float32 3 x size x size, normalised with
// o.mean and o.std, on the same device.
torch::Tensor applyDevicePlan(const torch::Tensor& decoded, const DevicePlan& plan,
                              const image::TransformOptions& o);

// A sample handed to the device undecoded (LoaderOptions::encodedOutput).
struct EncodedSample {
  std::shared_ptr<const std::vector<uint8_t>> jpeg;  // a JPEG file's bytes, to decode there ...
  torch::Tensor decoded;  // ... or another format, decoded here: uint8 3 x H x W on the CPU
  std::string name;       // for errors
  DevicePlan plan;        // drawn from the sample's seed, as the CPU transform draws
};
// The worker's half: a JPEG's header read for its size (the rest left to the device), any other
// format decoded; the plan drawn with `seed`. DataError naming the file it cannot read.
EncodedSample encodeSample(const RawSample& raw, const image::TransformOptions& o, uint64_t seed);
// The device's half for a batch: each sample decoded (`jpegs`: the JPEGs' pixels, in the order
// of the samples that have bytes; the caller decoded them, nvJPEG on a GPU) and transformed;
// float32 N x 3 x S x S normalised on `device`.
torch::Tensor transformEncoded(const std::vector<EncodedSample>& samples,
                               const std::vector<torch::Tensor>& jpegs,
                               const image::TransformOptions& o, const torch::Device& device);

}  // namespace fixres::data
