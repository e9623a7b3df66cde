// `fixres bench data`: throughput of the data pipeline (decode + transform + collate).
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/data/BenchData.h"

namespace fixres::cli {

void addBenchDataSubcommand(CLI::App& bench, GlobalOptions& global, std::function<int()>& action) {
  auto* sub =
      bench.add_subcommand("data", "Data pipeline throughput: decode + transform + collate");
  auto o = std::make_shared<data::BenchDataOptions>();
  auto kind = std::make_shared<std::string>("full");
  sub->add_option("--dataset-path", o->datasetPath, "Image folder (class sub-folders)")->required();
  sub->add_option("--kind", *kind, "Transform set: torch, full, val, val-nocrop, v2-train, v2-test")
      ->capture_default_str();
  sub->add_option("--input-size", o->inputSize, "Output resolution S")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "Loader worker threads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--batch", o->batchSize, "Batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--seconds", o->minSeconds, "Minimum measuring time (whole passes)")
      ->capture_default_str();
  sub->add_flag("--from-disk", o->fromDisk,
                "Read the files at each access (default: cached in memory)");
  auto cpuTime = std::make_shared<bool>(false);
  sub->add_flag("--cpu-time", *cpuTime,
                "Report images per CPU-second of the process instead of per wall-clock second");
  sub->add_flag("--uint8", o->uint8Output, "uint8 output (normalisation left to the GPU)");
  sub->add_flag("!--no-cropped-decode", o->croppedDecode,
                "Decode whole JPEGs for RandomResizedCrop instead of the crop region");
  sub->callback([sub, o, kind, cpuTime, &action]() {
    (void)sub;
    action = [o, kind, cpuTime]() {
      o->kind = image::parseTransformKind(*kind);
      double cpuRate = 0.0;
      const double rate = data::benchData(*o, &cpuRate);
      std::printf("%.1f img/s\n", *cpuTime ? cpuRate : rate);
      return 0;
    };
  });
  (void)global;
}

}  // namespace fixres::cli
