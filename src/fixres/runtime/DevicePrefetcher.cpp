// The loader-to-device prefetcher; its CUDA part compiles in CUDA builds only.
#include "fixres/runtime/DevicePrefetcher.h"

#ifdef FIXRES_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fixres::engine {

#ifdef FIXRES_WITH_CUDA
struct DevicePrefetcher::Ahead {
  explicit Ahead(c10::DeviceIndex device)
      : device(device), stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}
  c10::DeviceIndex device;
  c10::cuda::CUDAStream stream;
  at::cuda::CUDAEvent copied;
  std::optional<DeviceBatch> batch;  // in flight on `stream`; nullopt once the loader ran dry
  bool started = false;
};
#else
struct DevicePrefetcher::Ahead {};
#endif

DevicePrefetcher::DevicePrefetcher(data::Loader& loader, const RunDevice& run,
                                   const image::TransformOptions& transform)
    : loader_(loader), run_(run), transform_(transform) {
#ifdef FIXRES_WITH_CUDA
  if (run_.device.is_cuda()) ahead_ = std::make_unique<Ahead>(run_.device.index());
#endif
}

DevicePrefetcher::~DevicePrefetcher() = default;

bool DevicePrefetcher::overlapping() const {
  return ahead_ != nullptr;
}

std::optional<DeviceBatch> DevicePrefetcher::next() {
#ifdef FIXRES_WITH_CUDA
  if (ahead_) {
    Ahead& a = *ahead_;
    // Loads the next batch and queues its copy and normalisation on the side stream.
    auto launch = [&] {
      auto batch = loader_.next();
      if (!batch) {
        a.batch.reset();
        return;
      }
      c10::cuda::CUDAStreamGuard onSide(a.stream);
      a.batch = DeviceBatch{toModel(*batch, run_, transform_), batch->indices};
      a.copied.record(a.stream);
    };
    if (!a.started) {
      a.started = true;
      launch();
    }
    std::optional<DeviceBatch> ready = std::move(a.batch);
    if (ready) {
      auto current = c10::cuda::getCurrentCUDAStream(a.device);
      a.copied.block(current);
      // Memory made on the side stream is now also used on the compute stream: the caching
      // allocator must not hand it out again before that stream is done with it.
      ready->model.images.record_stream(current);
      ready->model.labels.record_stream(current);
      launch();
    }
    return ready;
  }
#endif
  auto batch = loader_.next();
  if (!batch) return std::nullopt;
  return DeviceBatch{toModel(*batch, run_, transform_), batch->indices};
}

}  // namespace fixres::engine
