// `fixres bench data`: throughput of the data pipeline (decode + transform + collate).
#include <torch/cuda.h>

#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/data/BenchData.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/data/GpuJpeg.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::cli {

void addBenchDataSubcommand(CLI::App& bench, std::function<int()>& action) {
  auto* sub =
      bench.add_subcommand("data", "Data pipeline throughput: decode + transform + collate");
  auto o = std::make_shared<data::BenchDataOptions>();
  o->kind = image::TransformKind::kFull;
  addConfigFile(*sub);
  bindSetting(*sub, kDatasetPathRow, o->datasetPath)->required();
  bindSetting(*sub, engine::kInputSizeRow, o->inputSize);
  bindSetting(*sub, engine::kAutoAugmentRow, o->autoAugment, image::autoAugmentKinds());
  bindSetting(*sub, engine::kRaMagnitudeRow, o->raMagnitude);
  bindSetting(*sub, engine::kAugmixSeverityRow, o->augmixSeverity);
  bindSetting(*sub, engine::kRandomEraseRow, o->randomErase);
  bindSetting(*sub, engine::kWorkersRow, o->threads);
  bindSetting(*sub, engine::kBatchRow, o->batchSize);
  data::BenchDataOptions::visitSettings(*o, SettingsBinder{*sub});
  auto decodeOn = std::make_shared<engine::DecodeOnChoice>(engine::DecodeOnChoice::kAuto);
  bindSetting(*sub, engine::kDecodeOnRow, *decodeOn, engine::numericsChoices().decodeOn);
  sub->callback([o, decodeOn, &action]() {
    action = [o, decodeOn]() {
      // auto: the GPU path when there is one for this kind, as a run's loader decides.
      const torch::Device device =
          torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::kCPU;
      image::TransformOptions t;
      t.kind = o->kind;
      const bool gpu = *decodeOn == engine::DecodeOnChoice::kGpu ||
                       (*decodeOn == engine::DecodeOnChoice::kAuto &&
                        data::whyNoGpuJpeg(device).empty() && data::whyNoDevicePath(t).empty());
      if (gpu) {
        std::printf("%.1f img/s\n", data::benchGpuDecode(*o, device));
        return 0;
      }
      double cpuRate = 0.0;
      data::BenchMemory mem;
      const double rate = data::benchData(*o, &cpuRate, &mem);
      if (o->memory) {
        std::printf(
            "memory: %.1f MiB after the first pass, %.1f MiB after the last, peak %.1f MiB\n",
            mem.afterFirstPass, mem.afterLastPass, mem.peak);
      }
      std::printf("%.1f img/s\n", o->cpuTime ? cpuRate : rate);
      return 0;
    };
  });
}

}  // namespace fixres::cli
