// Batched JPEG decoding on a GPU with NVIDIA's nvJPEG (--decode-on gpu): in the CUDA build when
// nvjpeg.h and libnvjpeg were found (the nvidia-nvjpeg wheel of requirements-torch2.txt, or the
// CUDA toolkit's); the CPU decoder stays the default and the reference (DeviceTransform.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fixres::data {

// "" when this build can decode JPEGs on `device`, else why not.
std::string whyNoGpuJpeg(const torch::Device& device);

class GpuJpegDecoder {
 public:
  // UsageError naming the reason when whyNoGpuJpeg(device) is not "".
  explicit GpuJpegDecoder(const torch::Device& device);
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  // Each file decoded to uint8 3 x H x W RGB on the device, in one batched call queued on the
  // current CUDA stream. DataError naming the file nvJPEG cannot read.
  std::vector<torch::Tensor> decode(const std::vector<const std::vector<uint8_t>*>& files,
                                    const std::vector<std::string>& names);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fixres::data
