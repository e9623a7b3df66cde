// Exact-shard evaluation and ordered extraction.
#include "fixres/engine/Evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Loader.h"
#include "fixres/data/Sampler.h"
#include "fixres/runtime/DevicePrefetcher.h"
#include "fixres/runtime/Metrics.h"
#include "fixres/runtime/ModelInput.h"

namespace fixres::engine {
namespace {

data::Loader makeEvalLoader(std::shared_ptr<const data::Dataset> dataset, const EvalOptions& o,
                            distributed::Communicator& comm) {
  size_t n = dataset->size();
  if (o.limit >= 0) n = std::min<size_t>(n, static_cast<size_t>(o.limit));
  auto sampler = data::makeDistributedSampler(n, comm.rank(), comm.worldSize(), /*shuffle=*/false,
                                              o.seed, /*padToEqual=*/false);
  auto lo = loaderOptions(o.run, o.transform, o.batch, o.workers, o.seed, o.skipBadImages,
                          /*dropLast=*/false);
  return data::Loader(std::move(dataset), sampler, o.transform, lo);
}

}  // namespace

EvalOptions evalOptions(const EvalSettings& e, int size, const Preprocessing& preprocessing,
                        const RunDevice& run, uint64_t seed) {
  EvalOptions o;
  o.transform = preprocessing.valTransform(size);
  o.batch = e.batch;
  o.workers = e.workers;
  o.skipBadImages = e.skipBadImages;
  o.testFlip = e.testFlip;
  o.seed = seed;
  o.run = run;
  return o;
}

nlohmann::json EvalResult::toJson() const {
  nlohmann::json j = {
      {"input_size", inputSize}, {"top1", top1}, {"top5", top5}, {"loss", loss}, {"count", count}};
  if (!complete) j["complete"] = false;
  return j;
}

namespace {
// WeightsError: the model gave logits that are not finite (weights that overflow at this size).
[[noreturn]] void failNonFinite(const EvalOptions& o, const torch::Tensor& logits) {
  const int64_t bad = (~torch::isfinite(logits)).any(1).sum().item<int64_t>();
  FIXRES_FAIL(WeightsError, o.modelSource, ": the model's logits are not finite for ", bad, " of ",
              logits.size(0), " images at ", o.transform.inputSize, " px (weights that overflow?)");
}
}  // namespace

torch::Tensor predictLogits(models::Model& model, const torch::Tensor& images, bool testFlip) {
  auto logits = model->forward(images);
  if (testFlip) logits = 0.5 * (logits + model->forward(images.flip({3})));
  return logits;
}

namespace {
// A line every 30 s (FIXRES_PROGRESS_SECONDS) of an evaluation that takes longer (the first after
// that long, so that a short one prints nothing): the batches done of this process's share, the
// rate and the time left.
class EvalProgress {
 public:
  EvalProgress(int size, int64_t batches) : size_(size), batches_(batches) {}
  void batchDone(int64_t images) {
    ++done_;
    images_ += images;
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_).count() < interval()) return;
    last_ = now;
    const double seconds = std::max(std::chrono::duration<double>(now - start_).count(), 1e-6);
    const double left = seconds / done_ * static_cast<double>(batches_ - done_);
    log::info("evaluating at ", size_, " px: batch ", done_, " of ", batches_, ", ",
              static_cast<int64_t>(images_ / seconds), " img/s, about ",
              static_cast<int64_t>(std::ceil(left)), " s left");
  }

 private:
  // FIXRES_PROGRESS_SECONDS, read once per process (a bad value warned of once, not at every
  // evaluation of a run).
  static double interval() {
    static const double every = [] {
      const char* text = std::getenv("FIXRES_PROGRESS_SECONDS");
      if (text == nullptr || *text == '\0') return 30.0;
      char* end = nullptr;
      const double v = std::strtod(text, &end);
      if (end != text && *end == '\0' && v >= 0 && v <= 86400) return v;
      log::warn("FIXRES_PROGRESS_SECONDS=", text,
                " is not a number of seconds in [0, 86400]: a line every 30 s");
      return 30.0;
    }();
    return every;
  }

  int size_;
  int64_t batches_, done_ = 0, images_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};
}  // namespace

EvalResult evaluate(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                    const EvalOptions& o, distributed::Communicator& comm) {
  torch::NoGradGuard noGrad;
  const bool wasTraining = model->is_training();
  model->eval();
  auto loader = makeEvalLoader(std::move(dataset), o, comm);
  loader.startEpoch(0);
  MetricSums sums;
  bool complete = true;
  DevicePrefetcher batches(loader, o.run, o.transform);
  EvalProgress progress(o.transform.inputSize, loader.batchesPerEpoch());
  auto batchStart = std::chrono::steady_clock::now();
  while (auto batch = batches.next()) {
    // Each batch is progress for a stop's watchdog (StopSignal.h): an epoch-end evaluation that
    // does not stop on a signal still ends within the grace of each batch.
    const auto now = std::chrono::steady_clock::now();
    noteProgress(std::chrono::duration<double>(now - batchStart).count());
    batchStart = now;
    if (o.stopOnSignal && stopSignal() != 0) {
      complete = false;
      break;
    }
    auto [x, y] = batch->model;
    torch::Tensor logits;
    {
      AutocastGuard autocast(o.run.device, o.run.numerics.precision);
      logits = predictLogits(model, x, o.testFlip).to(torch::kFloat32);
    }
    const double loss =
        torch::nn::functional::cross_entropy(
            logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    if (!std::isfinite(loss) && !o.modelSource.empty()) failNonFinite(o, logits);
    sums.lossSum += loss;
    sums.top1 += correctInTopK(logits, y, 1);
    sums.top5 += correctInTopK(logits, y, 5);
    sums.count += y.size(0);
    progress.batchDone(y.size(0));
  }
  if (loader.skippedImages() > 0)
    log::warn("evaluation skipped ", loader.skippedImages(), " unreadable image(s)");
  sums.reduce(comm);
  if (wasTraining) model->train();
  EvalResult r;
  r.count = static_cast<int64_t>(sums.count);
  r.inputSize = o.transform.inputSize;
  r.complete = complete;
  if (r.count > 0) {
    r.top1 = 100.0 * sums.top1 / sums.count;
    r.top5 = 100.0 * sums.top5 / sums.count;
    r.loss = sums.lossSum / sums.count;
  }
  return r;
}

Extraction extract(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                   const EvalOptions& o, distributed::Communicator& comm, bool embeddings) {
  torch::NoGradGuard noGrad;
  model->eval();
  auto loader = makeEvalLoader(dataset, o, comm);
  loader.startEpoch(0);
  std::vector<torch::Tensor> idx, logits, emb;
  DevicePrefetcher batches(loader, o.run, o.transform);
  bool complete = true;
  auto batchStart = std::chrono::steady_clock::now();
  while (auto batch = batches.next()) {
    const auto now = std::chrono::steady_clock::now();
    noteProgress(std::chrono::duration<double>(now - batchStart).count());
    batchStart = now;
    if (o.stopOnSignal && stopSignal() != 0) {
      complete = false;
      break;
    }
    auto x = batch->model.images;
    AutocastGuard autocast(o.run.device, o.run.numerics.precision);
    auto [l, e] = model->forwardWithEmbedding(x);
    if (o.testFlip) {
      auto [lf, ef] = model->forwardWithEmbedding(x.flip({3}));
      l = 0.5 * (l + lf);
      e = 0.5 * (e + ef);
    }
    idx.push_back(batch->indices);
    logits.push_back(l.to(torch::kCPU, torch::kFloat32));
    emb.push_back(embeddings ? e.to(torch::kCPU, torch::kFloat32) : torch::empty({l.size(0), 0}));
  }
  const int64_t classes = model->classifier()->options.out_features();
  const int64_t dim = embeddings ? model->embeddingDim() : 0;
  auto cat = [](std::vector<torch::Tensor>& v, torch::Tensor empty) {
    return v.empty() ? empty : torch::cat(v, 0);
  };
  // Gather (index, logits, embedding) rows from every rank, then put them in dataset order.
  auto rows =
      torch::cat({cat(idx, torch::empty({0}, torch::kLong)).to(torch::kFloat64).view({-1, 1}),
                  cat(logits, torch::empty({0, classes})).to(torch::kFloat64),
                  cat(emb, torch::empty({0, dim})).to(torch::kFloat64)},
                 1);
  auto all = distributed::allGatherVariable(comm, rows.to(comm.device())).cpu();
  Extraction out;
  out.complete = complete;
  if (comm.rank() != 0) return out;
  auto order = all.select(1, 0).argsort();
  all = all.index_select(0, order);
  auto indices = all.select(1, 0).to(torch::kLong);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < indices.size(0); ++i)
    labels.push_back(dataset->label(indices[i].item<int64_t>()));
  out.indices = indices.contiguous();
  out.labels = torch::tensor(labels, torch::kLong);
  out.logits = all.narrow(1, 1, classes).to(torch::kFloat32).contiguous();
  if (!o.modelSource.empty() && !torch::isfinite(out.logits).all().item<bool>())
    failNonFinite(o, out.logits);
  out.embeddings = all.narrow(1, 1 + classes, dim).to(torch::kFloat32).contiguous();
  return out;
}

}  // namespace fixres::engine
