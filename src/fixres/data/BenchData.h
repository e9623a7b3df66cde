// Data pipeline benchmark: decode + transform + collate throughput of the Loader on an image
// folder (files cached in memory unless fromDisk), in images per second.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "fixres/common/Setting.h"
#include "fixres/image/Transform.h"

namespace fixres::data {

struct BenchDataOptions {
  std::string datasetPath;  // an image folder (class sub-folders) or a folder of tar shards
  image::TransformKind kind = image::TransformKind::kFull;
  int inputSize = 224;
  int threads = 1;        // loader worker threads
  bool fromDisk = false;  // read files at each access instead of caching them in memory
  int64_t batchSize = 64;
  double minSeconds = 3.0;  // run whole passes over the folder until at least this long
  bool uint8Output = false;
  bool croppedDecode = true;  // JPEG region decoding for RandomResizedCrop
  image::AutoAugmentKind autoAugment = image::AutoAugmentKind::kNone;
  int raMagnitude = 9;
  int augmixSeverity = 3;
  double randomErase = 0.0;
  bool cpuTime = false;  // report images per CPU-second of the process
  bool memory = false;   // also report the resident memory

  // Its own rows (the transform's and the loader's are shared ones).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    const char* data = "bench data";
    v(Setting{"", "--kind", "Data", "Transform set", {}, kInvocation, data}, o.kind,
      image::transformKinds());
    v(Setting{"", "--seconds", "Options", "Minimum measuring time (whole passes)",
              Range::reals(0, 86400), kInvocation, data},
      o.minSeconds);
    v(Setting{"",
              "--from-disk",
              "Data",
              "Read the files at each access (default: cached in memory)",
              {},
              kInvocation,
              data},
      o.fromDisk);
    v(Setting{"",
              "--cpu-time",
              "Output",
              "Report images per CPU-second of the process instead of per wall-clock second",
              {},
              kInvocation,
              data},
      o.cpuTime);
    v(Setting{"",
              "--memory",
              "Output",
              "Also print the resident memory (MiB): after the first pass, after the last, peak",
              {},
              kInvocation,
              data},
      o.memory);
    v(Setting{"",
              "--uint8",
              "Data",
              "uint8 output (normalisation left to the GPU)",
              {},
              kInvocation,
              data},
      o.uint8Output);
    v(Setting{"",
              "--no-cropped-decode",
              "Data",
              "Decode whole JPEGs for RandomResizedCrop instead of the crop region",
              {},
              kInvocation,
              data},
      o.croppedDecode);
  }
};

// Resident memory of the process over a benchmark, in MiB.
struct BenchMemory {
  double afterFirstPass = 0.0;  // RSS once the first measured pass is done
  double afterLastPass = 0.0;   // RSS at the end (flat over the passes when equal)
  double peak = 0.0;            // peak RSS of the process (getrusage)
};

// Images per second of wall-clock time over whole passes (after one warm-up batch); when
// cpuRate is given, also images per second of process CPU time (user + system), which a
// loaded machine disturbs less; when memory is given, the resident memory. Tar shards are read
// in the training order (makeShardSampler, one rank). DataError for a bad folder.
double benchData(const BenchDataOptions& options, double* cpuRate = nullptr,
                 BenchMemory* memory = nullptr);
// --decode-on gpu (GpuDecodeBench.cpp): the folder's files read once into memory, then whole
// passes of nvJPEG batch decoding and the device transforms (kinds torch and val) on `device`,
// in images per second. UsageError without a GPU, without nvJPEG, or for another kind.
double benchGpuDecode(const BenchDataOptions& options, const torch::Device& device);

}  // namespace fixres::data
