// BatchNorm re-estimation (`fixres calibrate`) against PyTorch: a torchvision resnet18 whose
// BatchNorms are reset, set to momentum None (cumulative average) and run in train mode without
// gradients over the same batches (tests/reference/finetune_reference.py calibrate-batches).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/data/Npy.h"
#include "fixres/engine/Calibrate.h"
#include "fixres/models/BatchNorm.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {
namespace {

// Running statistics far from what the batches give, so that a missing reset shows.
void scrambleStatistics(models::Model& model) {
  torch::NoGradGuard noGrad;
  for (auto& item : model->named_buffers()) {
    if (item.key().find("running_mean") != std::string::npos) item.value().uniform_(-3, 3);
    if (item.key().find("running_var") != std::string::npos) item.value().uniform_(5, 9);
    if (item.key().find("num_batches_tracked") != std::string::npos) item.value().fill_(123);
  }
}

TEST(CalibrateTest, RunningStatisticsEqualPyTorchsCumulativeAverage) {
  const std::string dir = testing::makeTempDir("fixres_calibrate_");
  torch::manual_seed(5);
  auto model = models::createModel("resnet18", 10);
  scrambleStatistics(model);
  models::saveStateDictFile(*model, dir + "/model.pth");
  // Three batches, the last one smaller: the cumulative average weighs batches, not images.
  std::vector<torch::Tensor> batches = {torch::randn({4, 3, 40, 40}),
                                        torch::randn({4, 3, 40, 40}) * 2 + 0.5,
                                        torch::randn({3, 3, 40, 40})};
  for (size_t i = 0; i < batches.size(); ++i)
    data::writeNpy(dir + "/batch" + std::to_string(i) + ".npy", batches[i]);
  auto before = models::stateDict(*model);
  std::map<std::string, torch::Tensor> weightsBefore;
  for (const auto& e : before)
    if (e.key().find("running_") == std::string::npos) weightsBefore[e.key()] = e.value().clone();

  size_t next = 0;
  auto r = calibrateBatchNorm(model, [&]() -> torch::Tensor {
    return next < batches.size() ? batches[next++] : torch::Tensor();
  });
  EXPECT_EQ(r.batches, 3);
  EXPECT_EQ(r.images, 11);
  EXPECT_EQ(r.layers, 20);  // resnet18: bn1, 16 in the blocks, 3 downsample
  EXPECT_FALSE(model->is_training());

  bool ok = false;
  testing::runReference("finetune_reference.py", "calibrate-batches " + dir, &ok);
  ASSERT_TRUE(ok);
  auto expected = models::readTorchFile(dir + "/expected.pth");
  double worst = 0;
  int compared = 0;
  for (const auto& e : models::stateDict(*model)) {
    const auto want = testing::referenceTensor(expected, e.key());
    if (e.key().find("running_") != std::string::npos) {
      worst = std::max(worst, testing::relErr(e.value(), want));
      ++compared;
    } else if (e.key().find("num_batches_tracked") != std::string::npos) {
      EXPECT_EQ(e.value().item<int64_t>(), 3) << e.key();
      EXPECT_EQ(want.item<int64_t>(), 3) << e.key();
    } else {
      EXPECT_TRUE(torch::equal(e.value(), weightsBefore.at(e.key()))) << e.key() << " changed";
    }
  }
  EXPECT_EQ(compared, 40);
  // 1e-4: running variances are sums of squares over a batch in train mode, whose order follows
  // the CPU's vector width and the LibTorch version (1.4e-5 measured for ResNet-50 on another
  // CPU); a wrong momentum or statistic is off by far more (the momentum check below).
  EXPECT_LT(worst, 1e-4) << "worst relative L2 error of the running statistics vs PyTorch";
  std::cout << "[ calibrate ] " << compared << " running statistics, worst relative L2 error "
            << worst << "\n";

  // The momentum is restored: a later training step updates with 0.1 again.
  auto* bn = model->named_modules()["bn1"]->as<models::BatchNorm2d>();
  ASSERT_NE(bn, nullptr);
  ASSERT_TRUE(bn->options.momentum().has_value());
  EXPECT_DOUBLE_EQ(*bn->options.momentum(), 0.1);
}

TEST(CalibrateTest, FindsEveryBatchNormOfEachFamily) {
  for (const char* arch : {"resnet50", "tf_efficientnet_b0"}) {
    auto model = models::createModel(arch, 10);
    int64_t expected = 0;
    for (const auto& item : model->named_buffers())
      if (item.key().size() > 12 && item.key().rfind("running_mean") == item.key().size() - 12)
        ++expected;
    auto r = calibrateBatchNorm(model, [n = 0]() mutable -> torch::Tensor {
      return n++ < 1 ? torch::randn({2, 3, 64, 64}) : torch::Tensor();
    });
    EXPECT_EQ(r.layers, expected) << arch;
    EXPECT_GT(expected, 10) << arch;
  }
}

TEST(CalibrateTest, NoBatchIsADataError) {
  auto model = models::createModel("resnet18", 10);
  try {
    calibrateBatchNorm(model, [] { return torch::Tensor(); });
    ADD_FAILURE() << "no exception";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("no image"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fixres::engine
