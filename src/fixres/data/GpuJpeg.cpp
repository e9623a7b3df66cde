// nvJPEG's batched decoder (nvjpegDecodeBatched) into LibTorch tensors.
#include "fixres/data/GpuJpeg.h"

#include "fixres/common/Error.h"

#ifdef FIXRES_WITH_NVJPEG
#include <c10/cuda/CUDAStream.h>
#include <nvjpeg.h>
#endif

namespace fixres::data {

#ifdef FIXRES_WITH_NVJPEG

namespace {

void check(nvjpegStatus_t status, const std::string& what) {
  FIXRES_CHECK(status == NVJPEG_STATUS_SUCCESS, DataError, what, ": nvJPEG status ",
               static_cast<int>(status));
}

}  // namespace

std::string whyNoGpuJpeg(const torch::Device& device) {
  if (!device.is_cuda()) return "the run is on the CPU";
  return "";
}

struct GpuJpegDecoder::Impl {
  explicit Impl(const torch::Device& d) : device(d) {
    check(nvjpegCreateSimple(&handle), "nvJPEG start");
    check(nvjpegJpegStateCreate(handle, &state), "nvJPEG state");
  }
  ~Impl() {
    if (state) nvjpegJpegStateDestroy(state);
    if (handle) nvjpegDestroy(handle);
  }
  torch::Device device;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  int batch = 0;  // the batch size the state is set up for
};

GpuJpegDecoder::GpuJpegDecoder(const torch::Device& device) {
  const std::string why = whyNoGpuJpeg(device);
  FIXRES_CHECK(why.empty(), UsageError, "--decode-on gpu: ", why);
  impl_ = std::make_unique<Impl>(device);
}

std::vector<torch::Tensor> GpuJpegDecoder::decode(
    const std::vector<const std::vector<uint8_t>*>& files, const std::vector<std::string>& names) {
  const int n = static_cast<int>(files.size());
  std::vector<torch::Tensor> out;
  if (n == 0) return out;
  if (impl_->batch != n) {
    check(nvjpegDecodeBatchedInitialize(impl_->handle, impl_->state, n, 1, NVJPEG_OUTPUT_RGB),
          "nvJPEG batch set-up");
    impl_->batch = n;
  }
  std::vector<const unsigned char*> data(n);
  std::vector<size_t> lengths(n);
  std::vector<nvjpegImage_t> images(n);
  for (int i = 0; i < n; ++i) {
    data[i] = files[i]->data();
    lengths[i] = files[i]->size();
    int components = 0;
    nvjpegChromaSubsampling_t subsampling;
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    check(nvjpegGetImageInfo(impl_->handle, data[i], lengths[i], &components, &subsampling, widths,
                             heights),
          names[i]);
    auto t = torch::empty({3, heights[0], widths[0]},
                          torch::TensorOptions().dtype(torch::kUInt8).device(impl_->device));
    images[i] = nvjpegImage_t{};
    for (int c = 0; c < 3; ++c) {  // planar RGB: one plane per channel
      images[i].channel[c] =
          t.data_ptr<uint8_t>() + static_cast<size_t>(c) * heights[0] * widths[0];
      images[i].pitch[c] = static_cast<unsigned int>(widths[0]);
    }
    out.push_back(t);
  }
  const auto stream = c10::cuda::getCurrentCUDAStream(impl_->device.index());
  check(nvjpegDecodeBatched(impl_->handle, impl_->state, data.data(), lengths.data(), images.data(),
                            stream.stream()),
        "a batch from " + names[0]);
  return out;
}

#else

std::string whyNoGpuJpeg(const torch::Device& device) {
  if (!device.is_cuda()) return "the run is on the CPU";
  return "this build has no nvJPEG (a CUDA build finds it in the nvidia-nvjpeg wheel)";
}

struct GpuJpegDecoder::Impl {};

GpuJpegDecoder::GpuJpegDecoder(const torch::Device& device) {
  FIXRES_CHECK(false, UsageError, "--decode-on gpu: ", whyNoGpuJpeg(device));
}

std::vector<torch::Tensor> GpuJpegDecoder::decode(const std::vector<const std::vector<uint8_t>*>&,
                                                  const std::vector<std::string>&) {
  return {};
}

#endif

GpuJpegDecoder::~GpuJpegDecoder() = default;

}  // namespace fixres::data
