// `fixres bench data --decode-on gpu`: nvJPEG's batched decode and the device transforms
// (DeviceTransform.h) over a JPEG folder held in memory, in images per second.
#include <chrono>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/BenchData.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/data/GpuJpeg.h"

#ifdef FIXRES_WITH_CUDA
#include <torch/cuda.h>
#endif

namespace fixres::data {

double benchGpuDecode(const BenchDataOptions& o, const torch::Device& device) {
  FIXRES_CHECK(o.batchSize >= 1, UsageError, "--batch must be >= 1, got ", o.batchSize);
  image::TransformOptions t;
  t.kind = o.kind;
  t.inputSize = o.inputSize;
  const std::string why = whyNoDevicePath(t);
  FIXRES_CHECK(why.empty(), UsageError, "--decode-on gpu: ", why);
  GpuJpegDecoder decoder(device);  // UsageError without a GPU or nvJPEG
  const auto dataset = openDataset(o.datasetPath, {});
  std::vector<RawSample> samples;
  for (size_t i = 0; i < dataset->size(); ++i) samples.push_back(dataset->fetch(i));
  // A pass: the loader's encoded batches (encodeSample: the worker's half) through the device's
  // half (nvJPEG, transformEncoded), as toModel runs them.
  auto pass = [&](int64_t passIndex) {
    for (size_t b = 0; b < samples.size(); b += static_cast<size_t>(o.batchSize)) {
      std::vector<EncodedSample> batch;
      std::vector<const std::vector<uint8_t>*> files;
      std::vector<std::string> names;
      for (size_t i = b; i < std::min(samples.size(), b + o.batchSize); ++i) {
        batch.push_back(
            encodeSample(samples[i], t, static_cast<uint64_t>(passIndex) * samples.size() + i));
        if (batch.back().jpeg) {
          files.push_back(batch.back().jpeg.get());
          names.push_back(batch.back().name);
        }
      }
      (void)transformEncoded(batch, decoder.decode(files, names), t, device);
    }
  };
  auto sync = [&] {
#ifdef FIXRES_WITH_CUDA
    torch::cuda::synchronize();
#endif
  };
  pass(0);  // warm-up: nvJPEG's buffers, the kernels
  sync();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int64_t images = 0, passes = 0;
  double seconds = 0;
  do {
    pass(++passes);
    sync();
    images += static_cast<int64_t>(samples.size());
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < o.minSeconds);
  log::info("bench data --decode-on gpu: ", images, " images in ", seconds, " s (", passes,
            " passes, kind ", image::transformKindName(o.kind), ", size ", o.inputSize, ")");
  return static_cast<double>(images) / seconds;
}

}  // namespace fixres::data
