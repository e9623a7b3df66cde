// --sync-bn against a single process: 2 ranks x batch 4 of a ResNet with SyncBatchNorm give the
// outputs, the (averaged) gradients and the running statistics of 1 process x batch 8 with
// torch's BatchNorm, within 1e-5 of max(1, the largest value); and the plain BatchNorm2d of fixres
// is torch's BatchNorm2d.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <mutex>

#include "../distributed/InProcessRanks.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/models/BatchNorm.h"
#include "fixres/models/Registry.h"
#include "fixres/step/SyncBatchNorm.h"

namespace fixres::engine {
namespace {

models::Model seededModel() {
  torch::manual_seed(5);
  return models::createModel("resnet_tiny", 6);
}

// max |a - b| relative to max(1, max |b|): 2 ranks of 4 (two-pass statistics merged across
// ranks) against one batch of 8 sum in other orders, so they agree to float32 rounding of the
// largest value, not to absolute digits.
double maxDiff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(1.0, b.abs().max().item<double>());
  return (a - b).abs().max().item<double>() / scale;
}

TEST(SyncBatchNormTest, TwoRanksOfFourEqualOneProcessOfEight) {
  torch::manual_seed(9);
  auto x = torch::randn({8, 3, 20, 20}) * 2 + 0.5;
  auto y = torch::randint(0, 6, {8}, torch::kLong);
  // Reference: one process, batch 8, torch's batch_norm (no override).
  auto ref = seededModel();
  ref->train();
  auto refOut = ref->forward(x);
  torch::nn::functional::cross_entropy(refOut, y).backward();

  std::vector<models::Model> models{seededModel(), seededModel()};
  std::vector<torch::Tensor> outs(2);
  std::vector<int> layers(2);
  std::mutex m;
  distributed::runRanks(2, [&](distributed::Communicator& c) {
    auto& model = models[c.rank()];
    layers[c.rank()] = enableSyncBatchNorm(*model, c);
    model->train();
    std::vector<torch::Tensor> params;
    for (auto& p : model->parameters()) params.push_back(p);
    distributed::GradReducer reducer(c, params);
    reducer.zeroGrad();
    reducer.expectBackward(true);
    auto out = model->forward(x.narrow(0, 4 * c.rank(), 4));
    torch::nn::functional::cross_entropy(out, y.narrow(0, 4 * c.rank(), 4)).backward();
    reducer.reduce();
    std::lock_guard<std::mutex> lock(m);
    outs[c.rank()] = out.detach();
  });
  EXPECT_GT(layers[0], 3);
  EXPECT_LT(maxDiff(torch::cat(outs), refOut.detach()), 1e-5) << "outputs";
  auto refParams = ref->named_parameters();
  for (int r = 0; r < 2; ++r) {
    for (const auto& p : models[r]->named_parameters()) {
      EXPECT_LT(maxDiff(p.value().grad(), refParams[p.key()].grad()), 1e-5)
          << "gradient of " << p.key() << " on rank " << r;
    }
    auto refBuffers = ref->named_buffers();
    for (const auto& b : models[r]->named_buffers()) {
      EXPECT_LT(maxDiff(b.value().to(torch::kDouble), refBuffers[b.key()].to(torch::kDouble)), 1e-5)
          << "buffer " << b.key() << " on rank " << r;
    }
  }
  // Without --sync-bn each rank's statistics come from its 4 images: far from the reference.
  auto local = seededModel();
  local->train();
  local->forward(x.narrow(0, 0, 4));
  double worst = 0;
  auto refBuffers = ref->named_buffers();
  for (const auto& b : local->named_buffers())
    if (b.key().find("running_var") != std::string::npos)
      worst = std::max(worst, maxDiff(b.value(), refBuffers[b.key()]));
  EXPECT_GT(worst, 1e-3);
}

TEST(SyncBatchNormTest, PlainBatchNormIsTorchBatchNorm) {
  for (auto momentum : {c10::optional<double>(0.1), c10::optional<double>()}) {
    auto o = torch::nn::BatchNorm2dOptions(4).eps(1e-3).momentum(momentum);
    torch::manual_seed(1);
    models::BatchNorm2d ours(o);
    torch::nn::BatchNorm2d theirs(o);
    {
      torch::NoGradGuard g;
      ours->weight.uniform_(0.5, 1.5);
      ours->bias.uniform_(-1, 1);
      theirs->weight.copy_(ours->weight);
      theirs->bias.copy_(ours->bias);
    }
    for (int step = 0; step < 3; ++step) {
      auto x = torch::randn({5, 4, 3, 3}) * 3 + 1;
      EXPECT_TRUE(torch::equal(ours->forward(x), theirs->forward(x)));
    }
    EXPECT_TRUE(torch::equal(ours->running_mean, theirs->running_mean));
    EXPECT_TRUE(torch::equal(ours->running_var, theirs->running_var));
    EXPECT_EQ(ours->num_batches_tracked.item<int64_t>(), 3);
    ours->eval();
    theirs->eval();
    auto x = torch::randn({2, 4, 3, 3});
    EXPECT_TRUE(torch::equal(ours->forward(x), theirs->forward(x)));
    // Same names and order of parameters and buffers.
    EXPECT_EQ(ours->named_parameters().keys(), theirs->named_parameters().keys());
    EXPECT_EQ(ours->named_buffers().keys(), theirs->named_buffers().keys());
  }
}

}  // namespace
}  // namespace fixres::engine
