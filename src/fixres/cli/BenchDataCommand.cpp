// `fixres bench data`: throughput of the data pipeline (decode + transform + collate).
#include <torch/cuda.h>

#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/data/BenchData.h"
#include "fixres/data/DeviceTransform.h"
#include "fixres/data/GpuJpeg.h"
#include "fixres/engine/Numerics.h"

namespace fixres::cli {

void addBenchDataSubcommand(CLI::App& bench, std::function<int()>& action) {
  auto* sub =
      bench.add_subcommand("data", "Data pipeline throughput: decode + transform + collate");
  auto o = std::make_shared<data::BenchDataOptions>();
  o->kind = image::TransformKind::kFull;
  addShared(*sub, "--dataset-path", o->datasetPath)->required();
  addChoice(*sub, "--kind", o->kind, image::transformKinds(), "Transform set");
  addShared(*sub, "--input-size", o->inputSize);
  addSharedChoice(*sub, "--auto-augment", o->autoAugment, image::autoAugmentKinds());
  addShared(*sub, "--ra-magnitude", o->raMagnitude);
  addShared(*sub, "--augmix-severity", o->augmixSeverity);
  addShared(*sub, "--random-erase", o->randomErase);
  addShared(*sub, "--workers", o->threads);
  addShared(*sub, "--batch", o->batchSize);
  sub->add_option("--seconds", o->minSeconds, "Minimum measuring time (whole passes)")
      ->check(finiteIn(0, 86400))
      ->capture_default_str();
  sub->add_flag("--from-disk", o->fromDisk,
                "Read the files at each access (default: cached in memory)");
  auto cpuTime = std::make_shared<bool>(false);
  sub->add_flag("--cpu-time", *cpuTime,
                "Report images per CPU-second of the process instead of per wall-clock second");
  auto memory = std::make_shared<bool>(false);
  sub->add_flag("--memory", *memory,
                "Also print the resident memory (MiB): after the first pass, after the last, peak");
  sub->add_flag("--uint8", o->uint8Output, "uint8 output (normalisation left to the GPU)");
  sub->add_flag("!--no-cropped-decode", o->croppedDecode,
                "Decode whole JPEGs for RandomResizedCrop instead of the crop region");
  auto decodeOn = std::make_shared<engine::DecodeOnChoice>(engine::DecodeOnChoice::kAuto);
  addSharedChoice(*sub, "--decode-on", *decodeOn, engine::numericsChoices().decodeOn);
  sub->callback([o, cpuTime, memory, decodeOn, &action]() {
    action = [o, cpuTime, memory, decodeOn]() {
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
      if (*memory) {
        std::printf(
            "memory: %.1f MiB after the first pass, %.1f MiB after the last, peak %.1f MiB\n",
            mem.afterFirstPass, mem.afterLastPass, mem.peak);
      }
      std::printf("%.1f img/s\n", *cpuTime ? cpuRate : rate);
      return 0;
    };
  });
}

}  // namespace fixres::cli
