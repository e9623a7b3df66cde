// Loader-to-model batch path.
#include "fixres/runtime/ModelInput.h"

#include <map>
#include <memory>

#include "fixres/common/Error.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/data/GpuJpeg.h"
#include "fixres/image/Decode.h"

namespace fixres::engine {

data::LoaderOptions loaderOptions(const RunDevice& run, const image::TransformOptions& transform,
                                  int64_t batch, int workers, uint64_t seed, bool skipBadImages,
                                  bool dropLast) {
  data::LoaderOptions lo;
  lo.batchSize = batch;
  lo.threads = workers;
  lo.dropLast = dropLast;
  lo.seed = seed;
  lo.badImages = skipBadImages ? data::BadImagePolicy::kSkip : data::BadImagePolicy::kFail;
  lo.pinMemory = run.device.is_cuda();
  lo.uint8Output = run.numerics.normalizeOnDevice &&
                   transform.kind != image::TransformKind::kValNoCrop &&
                   transform.randomErase == 0.0;  // erased boxes hold normalised values
  const std::string noDevicePath = data::whyNoDevicePath(transform);
  FIXRES_CHECK(run.numerics.gpuDecode != Numerics::GpuDecode::kRequired || noDevicePath.empty(),
               UsageError, "--decode-on gpu: ", noDevicePath);
  lo.encodedOutput = run.numerics.gpuDecode != Numerics::GpuDecode::kNo && noDevicePath.empty();
  return lo;
}

namespace {

// An encoded batch's images on `device`: its JPEGs decoded there (nvJPEG, one batched call, a
// decoder per thread and device), or on the CPU with the CPU decoder (a CPU device: tests), then
// the device transforms.
torch::Tensor decodeOnDevice(const std::vector<data::EncodedSample>& samples,
                             const torch::Device& device, const image::TransformOptions& t) {
  std::vector<const std::vector<uint8_t>*> files;
  std::vector<std::string> names;
  for (const auto& s : samples)
    if (s.jpeg) {
      files.push_back(s.jpeg.get());
      names.push_back(s.name);
    }
  std::vector<torch::Tensor> jpegs;
  if (device.is_cuda()) {
    thread_local std::map<int, std::unique_ptr<data::GpuJpegDecoder>> decoders;
    auto& decoder = decoders[device.index()];
    if (!decoder) decoder = std::make_unique<data::GpuJpegDecoder>(device);
    jpegs = decoder->decode(files, names);
  } else {
    for (size_t i = 0; i < files.size(); ++i) {
      const auto im = image::decodeImage(files[i]->data(), files[i]->size(), names[i]);
      jpegs.push_back(data::imageToChw(im));
    }
  }
  return data::transformEncoded(samples, jpegs, t, device);
}

}  // namespace

ModelBatch toModel(const data::Batch& batch, const RunDevice& run,
                   const image::TransformOptions& transform) {
  ModelBatch out;
  out.images = batch.encoded.empty() ? batch.images.to(run.device, /*non_blocking=*/true)
                                     : decodeOnDevice(batch.encoded, run.device, transform);
  if (out.images.scalar_type() == torch::kUInt8)
    out.images = normalizeOnDevice(out.images, batch.lighting, transform);
  if (run.numerics.channelsLast) out.images = out.images.contiguous(at::MemoryFormat::ChannelsLast);
  out.labels = batch.labels.to(run.device, /*non_blocking=*/true);
  return out;
}

torch::Tensor normalizeOnDevice(const torch::Tensor& images, const torch::Tensor& lighting,
                                const image::TransformOptions& t) {
  FIXRES_CHECK(images.scalar_type() == torch::kUInt8 && images.dim() == 4, UsageError,
               "normalizeOnDevice needs a uint8 N x 3 x H x W batch");
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(images.device());
  auto x = images.to(torch::kFloat32).div_(255.0f);
  if (t.lightingStd > 0.0f && lighting.defined()) {
    x.add_(lighting.to(opts).view({-1, 3, 1, 1})).div_(1.0f + t.lightingStd);
  }
  auto mean = torch::tensor({t.mean[0], t.mean[1], t.mean[2]}, opts).view({1, 3, 1, 1});
  auto std = torch::tensor({t.std[0], t.std[1], t.std[2]}, opts).view({1, 3, 1, 1});
  return x.sub_(mean).div_(std);
}

}  // namespace fixres::engine
