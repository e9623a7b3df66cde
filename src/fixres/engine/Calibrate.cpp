// BatchNorm re-estimation at the test resolution.
#include "fixres/engine/Calibrate.h"

#include <optional>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/data/Loader.h"
#include "fixres/data/Sampler.h"
#include "fixres/models/BatchNorm.h"
#include "fixres/models/Family.h"
#include "fixres/runtime/ModelInput.h"

namespace fixres::engine {
namespace {

// The BatchNorm layers of a model, with what calibration changes on them.
struct Norm {
  torch::nn::Module* module;
  torch::nn::BatchNormOptions* options;
  torch::Tensor runningMean, runningVar, tracked;
  c10::optional<double> momentum;
};

template <typename Impl>
bool collect(torch::nn::Module& m, std::vector<Norm>& out) {
  auto* bn = dynamic_cast<Impl*>(&m);
  if (bn == nullptr) return false;
  if (!bn->options.track_running_stats()) return true;  // nothing to estimate
  out.push_back({bn, &bn->options, bn->running_mean, bn->running_var, bn->num_batches_tracked,
                 bn->options.momentum()});
  return true;
}

std::vector<Norm> batchNorms(torch::nn::Module& model) {
  std::vector<Norm> out;
  for (const auto& m : model.modules(/*include_self=*/true)) {
    collect<models::BatchNorm2dImpl>(*m, out) || collect<torch::nn::BatchNorm2dImpl>(*m, out) ||
        collect<torch::nn::BatchNorm1dImpl>(*m, out) ||
        collect<torch::nn::BatchNorm3dImpl>(*m, out);
  }
  return out;
}

}  // namespace

CalibrationResult calibrateBatchNorm(models::Model& model,
                                     const std::function<torch::Tensor()>& next) {
  std::vector<Norm> norms = batchNorms(*model);
  FIXRES_CHECK(!norms.empty(), UsageError, "calibrate: ", model->family().name,
               " models have no BatchNorm layer, so nothing to recalibrate (their LayerNorms "
               "normalise each image by itself, at any resolution); fine-tune the head at the "
               "test resolution instead (fixres finetune, or sweep --finetune)");
  model->eval();
  {
    torch::NoGradGuard noGrad;
    for (auto& n : norms) {
      n.runningMean.zero_();
      n.runningVar.fill_(1);
      n.tracked.zero_();
      // momentum None: the running statistics become the cumulative average over the batches.
      n.options->momentum(c10::nullopt);
      n.module->train();
    }
  }
  CalibrationResult r;
  r.layers = static_cast<int64_t>(norms.size());
  auto restore = [&] {
    for (auto& n : norms) n.options->momentum(n.momentum);
    model->eval();
  };
  try {
    torch::NoGradGuard noGrad;
    // A batch of one image gives each BatchNorm layer one value per channel wherever the feature
    // map is 1x1, and no variance: it joins its neighbour (a last batch of one, the batch before).
    torch::Tensor x = next();
    while (x.defined()) {
      torch::Tensor following = next();
      if (following.defined() && (x.size(0) == 1 || following.size(0) == 1)) {
        x = torch::cat({x, following});
        following = next();
      }
      FIXRES_CHECK(x.size(0) > 1, DataError,
                   "calibrate: ", r.images == 0 ? "one image in all" : "a batch of one image",
                   ": BatchNorm statistics need at least 2 images a batch");
      model->forward(x);
      r.images += x.size(0);
      r.batches++;
      x = following;
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  FIXRES_CHECK(r.batches > 0, DataError, "calibrate: no image to estimate the statistics from");
  return r;
}

CalibrationResult calibrate(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                            const CalibrateOptions& o) {
  const int64_t n = static_cast<int64_t>(dataset->size());
  const int64_t take = o.maxImages > 0 ? std::min(o.maxImages, n) : n;
  FIXRES_CHECK(o.eval.batch >= 2, UsageError, "--batch ", o.eval.batch,
               ": BatchNorm calibration needs batches of at least 2 images");
  FIXRES_CHECK(take != 1, UsageError, "calibrate: 1 image to calibrate on (",
               o.maxImages == 1 ? "--max-images 1" : "the data set holds one",
               "): BatchNorm statistics need at least 2");
  auto sampler = data::makeDistributedSampler(static_cast<size_t>(n), 0, 1, /*shuffle=*/true,
                                              o.eval.seed, /*padToEqual=*/false);
  auto lo = loaderOptions(o.eval.run, o.eval.transform, o.eval.batch, o.eval.workers, o.eval.seed,
                          o.eval.skipBadImages, /*dropLast=*/false);
  data::Loader loader(dataset, sampler, o.eval.transform, lo);
  loader.startEpoch(0);
  int64_t seen = 0;
  return calibrateBatchNorm(model, [&]() -> torch::Tensor {
    if (seen >= take) return {};
    auto batch = loader.next();
    if (!batch) return {};
    auto x = toModel(*batch, o.eval.run, o.eval.transform).images;
    if (seen + x.size(0) > take) x = x.narrow(0, 0, take - seen);
    seen += x.size(0);
    return x;
  });
}

}  // namespace fixres::engine
