// The EMA weights against torchvision 0.14's references (tests/reference/ema_mix_reference.py
// ema): the decay adjustment, torch.optim.swa_utils.AveragedModel(use_buffers=True) with their
// ema_avg on a model with BatchNorm, the update schedule and the warm-up reset, bitwise; and the
// checkpoint's model_ema read back bitwise.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"
#include "fixres/step/Checkpoint.h"
#include "fixres/step/ModelEma.h"
#include "fixres/weights/TorchFile.h"

namespace fixres::engine {
namespace {

c10::impl::GenericDict emaDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

// A detached copy of the module's state dict.
c10::Dict<std::string, at::Tensor> emaSnapshot(const torch::nn::Module& m) {
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& e : models::stateDict(m)) out.insert(e.key(), e.value().clone());
  return out;
}

TEST(ModelEmaTest, EqualsAveragedModelOfTheReferencesOverStepsAndWarmup) {
  constexpr double kDecay = 0.9;
  constexpr int64_t kWorld = 2, kBatch = 4, kSteps = 2, kEpochs = 100;
  constexpr double kWarmup = 1;
  torch::manual_seed(3);
  auto model = models::createModel("resnet_tiny", 5);
  torch::manual_seed(99);  // other values: the first update must copy
  auto average = models::createModel("resnet_tiny", 5);
  EmaOptions o;
  o.decay = kDecay;
  o.steps = kSteps;
  o.warmupEpochs = kWarmup;
  o.adjustedDecay = adjustedEmaDecay(kDecay, kWorld, kBatch, kSteps, kEpochs);
  ModelEma ema(average, o);

  // Three epochs of four optimizer steps: updates at iterations 0 and 2 of each, the ones of
  // epoch 0 (warm-up) each restarting the average. Each "step" moves every parameter and runs a
  // train-mode forward (BatchNorm statistics and num_batches_tracked move).
  auto snapshots = c10::impl::GenericList(c10::AnyType::get());
  auto schedule = c10::impl::GenericList(c10::AnyType::get());
  int64_t updates = 0;
  model->train();
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (int64_t i = 0; i < 4; ++i) {
      {
        torch::NoGradGuard noGrad;
        for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.05);
        model->forward(torch::randn({2, 3, 16, 16}) * 2 + 0.5);
      }
      updates += ema.afterStep(*model, epoch, i) ? 1 : 0;
      snapshots.push_back(emaSnapshot(*model));
      schedule.push_back(c10::List<int64_t>({epoch, i}));
    }
  }
  auto params = c10::List<std::string>();
  for (const auto& p : model->named_parameters()) params.push_back(p.key());
  auto config = emaDict();
  config.insert("model_ema_decay", kDecay);
  config.insert("world_size", kWorld);
  config.insert("batch_size", kBatch);
  config.insert("model_ema_steps", kSteps);
  config.insert("epochs", kEpochs);
  config.insert("lr_warmup_epochs", kWarmup);
  auto in = emaDict();
  in.insert("config", config);
  in.insert("snapshots", snapshots);
  in.insert("schedule", schedule);
  in.insert("params", params);
  const std::string dir = testing::makeTempDir("fixres_ema_");
  models::writeTorchFile(dir + "/in.pth", in);
  testing::runReference("ema_mix_reference.py", "ema " + dir + "/in.pth " + dir + "/out.pth");
  auto out = models::readTorchFile(dir + "/out.pth").toGenericDict();

  EXPECT_EQ(out.at("decay").toDouble(), o.adjustedDecay);  // 1 - 0.1 x 2 x 4 x 2 / 100
  EXPECT_DOUBLE_EQ(o.adjustedDecay, 0.984);
  EXPECT_EQ(out.at("updates").toInt(), updates);
  EXPECT_EQ(updates, 6);
  EXPECT_EQ(ema.nAveraged(), 4);  // the two of epoch 0 reset, then 4 counted

  auto expected = out.at("state").toGenericDict();
  auto ours = ema.stateDict();
  // The same keys (the reference's module is flat, so its order is not the model's);
  // AveragedModel's n_averaged comes first.
  ASSERT_EQ(expected.size(), ours.size());
  EXPECT_EQ(ours.begin()->key(), "n_averaged");
  int64_t differing = 0;
  double worst = 0;
  for (const auto& item : ours) {
    ASSERT_TRUE(expected.contains(item.key())) << item.key();
    const at::Tensor ref = expected.at(item.key()).toTensor();
    ASSERT_EQ(ref.scalar_type(), item.value().scalar_type()) << item.key();
    if (!torch::equal(ref, item.value().cpu())) {
      ++differing;
      worst = std::max(
          worst,
          (ref.to(torch::kDouble) - item.value().to(torch::kDouble)).abs().max().item<double>());
    }
  }
  std::cout << "[ ema ] " << ours.size() << " entries against AveragedModel: " << differing
            << " differ, max abs diff " << worst << "\n";
  EXPECT_EQ(differing, 0) << "max abs diff " << worst;
  // num_batches_tracked averaged in float32 and truncated: it lags the model's 12.
  EXPECT_EQ(ours.at("module.bn1.num_batches_tracked").item<int64_t>(),
            expected.at("module.bn1.num_batches_tracked").toTensor().item<int64_t>());
  std::cout << "[ ema ] num_batches_tracked: model 12, EMA "
            << ours.at("module.bn1.num_batches_tracked").item<int64_t>() << "\n";
}

TEST(ModelEmaTest, DecayAdjustmentFollowsTheReferencesFormula) {
  // alpha = min(1, (1 - decay) x world x batch x steps / epochs); decay' = 1 - alpha.
  EXPECT_DOUBLE_EQ(adjustedEmaDecay(0.99998, 8, 32, 32, 600),
                   1.0 - (1.0 - 0.99998) * 8 * 32 * 32 / 600);
  EXPECT_EQ(adjustedEmaDecay(0.9, 8, 64, 32, 10), 0.0);  // alpha clamped at 1: the copy
  EXPECT_EQ(adjustedEmaDecay(1.0, 4, 64, 32, 10), 1.0);
}

TEST(ModelEmaTest, BadValuesNameTheFlag) {
  EmaOptions o;
  o.decay = 1.5;
  EXPECT_THROW(
      {
        try {
          o.validate();
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("--model-ema-decay"), std::string::npos);
          throw;
        }
      },
      UsageError);
  o.decay = 0.9;
  o.steps = 0;
  EXPECT_THROW(o.validate(), UsageError);
}

TEST(ModelEmaTest, CheckpointKeepsModelEmaBitwiseAndPythonReadsIt) {
  torch::manual_seed(5);
  auto model = models::createModel("resnet_tiny", 4);
  EmaOptions o;
  o.decay = 0.7;
  o.steps = 1;
  ModelEma ema(models::createModel("resnet_tiny", 4), o);
  model->train();
  for (int k = 0; k < 3; ++k) {
    torch::NoGradGuard noGrad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.1);
    model->forward(torch::randn({2, 3, 16, 16}));
    ema.update(*model);
  }
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const std::string dir = testing::makeTempDir("fixres_emackpt_");
  CheckpointState state;
  state.configJson = "{}";
  saveCheckpoint(dir + "/c.pth", state, *model, OptimizerRef{sgd}, {ema.checkpointState()});

  ModelEma back(models::createModel("resnet_tiny", 4), o);
  auto fresh = models::createModel("resnet_tiny", 4);
  torch::optim::SGD sgd2(fresh->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  loadCheckpoint(dir + "/c.pth", *fresh, OptimizerRef{sgd2}, {}, {back.checkpointState()});
  EXPECT_EQ(back.nAveraged(), 3);
  auto a = ema.stateDict();
  auto b = back.stateDict();
  for (const auto& item : a)
    EXPECT_TRUE(torch::equal(item.value(), b.at(item.key()))) << item.key();
  // Python reads model_ema as AveragedModel's state dict.
  const std::string code = "import torch; d = torch.load('" + dir +
                           "/c.pth')['model_ema']; k = list(d); "
                           "assert k[0] == 'n_averaged' and int(d['n_averaged']) == 3, k[:2]; "
                           "assert all(x.startswith('module.') for x in k[1:]); print(len(k))";
  EXPECT_EQ(testing::runCommand(std::string(FIXRES_PYTHON_COMMAND) + " -c \"" + code + "\""), 0);
  // Its weights load as a model (the --use-ema path), n_averaged set aside.
  auto viaEntry = models::createModel("resnet_tiny", 4);
  models::LoadOptions lo;
  lo.entry = "model_ema";
  models::loadWeightsFile(*viaEntry, dir + "/c.pth", lo);
  for (const auto& item : models::stateDict(*viaEntry))
    EXPECT_TRUE(torch::equal(item.value(), a.at("module." + item.key()))) << item.key();
  // A checkpoint without model_ema: the error names the file and the entry.
  saveCheckpoint(dir + "/plain.pth", state, *model, OptimizerRef{sgd});
  testing::expectWeightsError([&] { models::loadWeightsFile(*viaEntry, dir + "/plain.pth", lo); },
                              {dir + "/plain.pth", "has no 'model_ema' entry", "--model-ema"});
}

}  // namespace
}  // namespace fixres::engine
