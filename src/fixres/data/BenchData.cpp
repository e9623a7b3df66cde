// The loader timed end to end, as a trainer would drive it (sequential sampler, full batches).
#include "fixres/data/BenchData.h"

#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/DatasetReader.h"
#include "fixres/data/Loader.h"

namespace fixres::data {
namespace {

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec) + double(u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_stime.tv_usec);
}

// Current resident set size in MiB (/proc/self/statm), 0 when unknown.
double residentMiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

}  // namespace

double benchData(const BenchDataOptions& o, double* cpuRate, BenchMemory* memory) {
  FIXRES_CHECK(o.threads >= 1, UsageError, "bench threads must be >= 1, got ", o.threads);
  const DatasetReader& reader = readerFor(o.datasetPath);
  std::shared_ptr<const Dataset> dataset = reader.open(o.datasetPath, {});
  if (!o.fromDisk) dataset = cacheInMemory(dataset);
  // Data its reader requires the shard sampler for: the training order (shard after shard
  // through the shuffle buffer); else every sample in order.
  auto sampler = reader.requiredSampler() == SamplerKind::kShard
                     ? makeShardSampler(dataset->shardSizes(), 0, 1, 0)
                     : makeDistributedSampler(dataset->size(), 0, 1, false, 0, false);
  image::TransformOptions t;
  t.kind = o.kind;
  t.inputSize = o.inputSize;
  t.croppedDecode = o.croppedDecode;
  t.autoAugment = o.autoAugment;
  t.raMagnitude = o.raMagnitude;
  t.augmixSeverity = o.augmixSeverity;
  t.randomErase = o.randomErase;
  LoaderOptions lo;
  lo.batchSize = o.batchSize;
  lo.threads = o.threads;
  lo.prefetchBatches = std::max(2, 2 * o.threads);
  lo.uint8Output = o.uint8Output && o.randomErase == 0.0;  // erasing writes normalised values
  Loader loader(dataset, sampler, t, lo);

  loader.startEpoch(0);
  (void)loader.next();  // warm-up: first allocations, page faults
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double cpuStart = cpuSeconds();
  int64_t images = 0;
  double seconds = 0.0;
  int64_t epoch = 1;
  BenchMemory mem;
  do {  // whole passes, at least one
    loader.startEpoch(epoch++);
    while (auto batch = loader.next()) images += batch->images.size(0);
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (epoch == 2) mem.afterFirstPass = residentMiB();
  } while (seconds < o.minSeconds);
  const double cpu = cpuSeconds() - cpuStart;
  mem.afterLastPass = residentMiB();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  // ru_maxrss is in KiB on Linux (and may lag the current size by a little).
  mem.peak = std::max(static_cast<double>(u.ru_maxrss) / 1024.0, mem.afterLastPass);
  if (memory) *memory = mem;
  if (cpuRate) *cpuRate = static_cast<double>(images) / cpu;
  log::info("bench data: ", images, " images in ", seconds, " s, ", cpu, " s CPU (",
            dataset->size(), " files, kind ", image::transformKindName(o.kind), ", size ",
            o.inputSize, ", ", o.threads, " thread(s), ", epoch - 1, " pass(es))");
  return static_cast<double>(images) / seconds;
}

}  // namespace fixres::data
