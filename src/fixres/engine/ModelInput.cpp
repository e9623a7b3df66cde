// Loader-to-model batch path.
#include "fixres/engine/ModelInput.h"

#include "fixres/common/Error.h"

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
  return lo;
}

ModelBatch toModel(const data::Batch& batch, const RunDevice& run,
                   const image::TransformOptions& transform) {
  ModelBatch out;
  out.images = batch.images.to(run.device, /*non_blocking=*/true);
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
