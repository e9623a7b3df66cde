// The training step's numerics: gradient accumulation is the full-batch gradient (the mean
// loss over the batch is the mean of the micro-batch means), bf16 autocast stays within bf16
// tolerance of fp32, channels-last computes the same function as NCHW.
#include <gtest/gtest.h>

#include <torch/torch.h>
#include <map>
#include <set>

#include <ATen/autocast_mode.h>

#include <cmath>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/models/Registry.h"
#include "fixres/runtime/Precision.h"
#include "fixres/step/TrainStep.h"

namespace fixres::engine {
namespace {

models::Model tinyModel() {
  torch::manual_seed(7);
  return models::createModel("resnet_tiny", 5);
}

double maxRelDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

TEST(TrainStepTest, AccumulatedMicroBatchesEqualOneFullBatchStep) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto full = tinyModel();
  auto accum = tinyModel();
  torch::manual_seed(11);
  auto x = torch::randn({8, 3, 24, 24});
  auto y = torch::randint(0, 5, {8}, torch::kLong);
  StepOptions so;
  so.learningRate = 0.5;
  TrainStep a(full, so, *comm);
  TrainStep b(accum, so, *comm);
  // Eval mode: BN uses running statistics, so the loss is a plain mean over images and the
  // split into micro-batches must not change the gradient.
  full->eval();
  accum->eval();
  for (int round = 0; round < 2; ++round) {  // twice: momentum buffers too
    double lossFull = a.step(x, y, 0.5);
    b.begin();
    double l0 = b.backward(x.narrow(0, 0, 4), y.narrow(0, 0, 4), 0.5).item<double>();
    double l1 = b.backward(x.narrow(0, 4, 4), y.narrow(0, 4, 4), 0.5).item<double>();
    b.finish(0.5);
    EXPECT_NEAR(lossFull, 0.5 * (l0 + l1), 1e-5);
  }
  auto pa = full->named_parameters();
  auto pb = accum->named_parameters();
  double worst = 0;
  for (const auto& item : pa) worst = std::max(worst, maxRelDiff(pb[item.key()], item.value()));
  EXPECT_LT(worst, 1e-5);
  // And the step did move the weights (the comparison is not between two untouched models).
  auto fresh = tinyModel();
  EXPECT_GT(maxRelDiff(fresh->named_parameters()["fc.weight"], pa["fc.weight"]), 1e-3);
}

TEST(TrainStepTest, Bf16AutocastIsWithinBf16ToleranceOfFp32) {
  auto model = tinyModel();
  model->eval();
  torch::NoGradGuard noGrad;
  auto x = torch::randn({4, 3, 32, 32});
  auto ref = model->forward(x);
  torch::Tensor low;
  {
    AutocastGuard guard(torch::kCPU, Precision::kBf16);
    // Convolutions really run in bf16 under the guard.
    auto conv = torch::conv2d(x, torch::randn({4, 3, 3, 3}));
    EXPECT_EQ(conv.scalar_type(), torch::kBFloat16);
    low = model->forward(x).to(torch::kFloat32);
  }
  // And in fp32 again once it is gone (what LibTorch's autocast state says, by its effect: the
  // query functions differ between LibTorch 1.13 and 2.x).
  EXPECT_EQ(torch::conv2d(x, torch::randn({4, 3, 3, 3})).scalar_type(), torch::kFloat32);
  // bf16 keeps 8 bits of mantissa (relative step 2^-8 = 0.4%); a dozen layers accumulate a few.
  EXPECT_LT(maxRelDiff(low, ref), 0.05);
  EXPECT_GT(maxRelDiff(low, ref), 0.0);  // it did compute in lower precision
}

TEST(TrainStepTest, Fp32GuardDoesNothing) {
  AutocastGuard guard(torch::kCPU, Precision::kFp32);
  EXPECT_EQ(torch::conv2d(torch::randn({1, 3, 8, 8}), torch::randn({4, 3, 3, 3})).scalar_type(),
            torch::kFloat32);
}

TEST(TrainStepTest, ChannelsLastComputesTheSameLogits) {
  auto model = tinyModel();
  model->eval();
  torch::NoGradGuard noGrad;
  auto x = torch::randn({2, 3, 40, 40});
  auto ref = model->forward(x);
  useChannelsLast(*model);
  EXPECT_TRUE(
      model->named_parameters()["conv1.weight"].is_contiguous(at::MemoryFormat::ChannelsLast));
  auto out = model->forward(x.contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_LT(maxRelDiff(out, ref), 1e-5);
}

// The model's whole state: weights, buffers (BN statistics) and momentum buffers.
std::vector<torch::Tensor> snapshot(models::Model& model, TrainStep& step) {
  std::vector<torch::Tensor> out;
  for (auto& t : model->parameters()) out.push_back(t.detach().clone());
  for (auto& t : model->buffers()) out.push_back(t.clone());
  for (auto& t : optim::optimizerStateTensors(step.optimizer(), step.optimizerKind()))
    out.push_back(t.clone());
  return out;
}

bool sameState(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

TEST(TrainStepTest, AStepWithANonFiniteLossIsNotAppliedAndLeavesTheModelAsItWas) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  StepOptions so;
  so.learningRate = 0.1;
  so.maxSkippedInARow = 10;  // --nan-policy skip: a good step after them still applies
  so.skipOn = SkipOn::kHost;
  TrainStep step(model, so, *comm);
  step.setTrainingMode();  // BN statistics move with every forward pass
  torch::manual_seed(3);
  auto x = torch::randn({4, 3, 24, 24});
  auto y = torch::randint(0, 5, {4}, torch::kLong);
  step.step(x, y, 0.1);  // momentum buffers exist
  const auto before = snapshot(model, step);
  ASSERT_TRUE(step.stateFinite());
  for (double bad : {NAN, INFINITY}) {
    auto poisoned = x.clone();
    poisoned[1][0][3][3] = bad;
    step.begin();
    const double loss = step.backward(poisoned, y, 1.0).item<double>();
    EXPECT_FALSE(std::isfinite(loss));
    EXPECT_EQ(step.finish(0.1, std::isfinite(loss)), StepResult::kNotFinite) << bad;
    EXPECT_TRUE(sameState(before, snapshot(model, step))) << "state changed by a dropped step";
  }
  // A finite loss whose verdict says otherwise (another rank's loss) is dropped the same way.
  step.begin();
  step.backward(x, y, 1.0);
  EXPECT_EQ(step.finish(0.1, /*lossFinite=*/false), StepResult::kNotFinite);
  EXPECT_TRUE(sameState(before, snapshot(model, step)));
  // And a good step still applies.
  step.begin();
  step.backward(x, y, 1.0);
  EXPECT_EQ(step.finish(0.1, true), StepResult::kApplied);
  EXPECT_FALSE(sameState(before, snapshot(model, step)));
}

// The names of the parameters and buffers that one fine-tuning step (lr 0.1, 5 classes, seeded
// random batch of `x`'s shape) of architecture `arch` changes, and every name with `names`.
std::set<std::string> changedByAFinetuneStep(const std::string& arch, std::vector<int64_t> shape,
                                             std::set<std::string>* names = nullptr) {
  auto comm = distributed::makeSingleProcessCommunicator();
  models::ModelOptions mo;
  mo.numClasses = 5;
  torch::manual_seed(4);
  models::Model model = models::createModel(arch, mo);
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : model->named_parameters()) before[p.key()] = p.value().detach().clone();
  for (const auto& b : model->named_buffers()) before[b.key()] = b.value().clone();
  StepOptions so;
  so.finetune = true;
  so.learningRate = 0.1;
  TrainStep step(model, so, *comm);
  step.setTrainingMode();
  step.step(torch::randn(shape), torch::randint(0, 5, {shape[0]}, torch::kLong), 0.1);
  std::set<std::string> changed;
  auto params = model->named_parameters();
  auto buffers = model->named_buffers();
  for (const auto& [k, v] : before) {
    if (names) names->insert(k);
    const torch::Tensor now = params.contains(k) ? params[k] : buffers[k];
    if (!torch::equal(now, v)) changed.insert(k);
  }
  return changed;
}

// The reference's EfficientNet fine-tuning (main_finetune): one step changes the classifier and
// conv_head (weights) and bn2's running statistics, and leaves every other parameter and buffer
// bitwise as it was.
TEST(TrainStepTest, EfficientNetFinetuneStepChangesExactlyTheRecipesTensors) {
  EXPECT_EQ(
      changedByAFinetuneStep("tf_efficientnet_b0", {4, 3, 64, 64}),
      (std::set<std::string>{"classifier.weight", "classifier.bias", "conv_head.weight",
                             "bn2.running_mean", "bn2.running_var", "bn2.num_batches_tracked"}));
}

// The reference's PNASNet fine-tuning (main_finetune): one step changes exactly the parameters
// and BatchNorm buffers of cell_9, cell_10, cell_11 and last_linear (every parameter there moves:
// weight decay acts where the gradient is zero), and leaves every other tensor bitwise as it was.
// 33 x 33 inputs: the smallest whose last feature map (1 x 1) gives train-mode BatchNorm two
// values per channel with a batch of 2.
TEST(TrainStepTest, PNASNetFinetuneStepChangesExactlyTheRecipesTensors) {
  std::set<std::string> names, expected;
  const std::set<std::string> changed = changedByAFinetuneStep("PNASNet", {2, 3, 33, 33}, &names);
  auto inRecipe = [](const std::string& k) {
    for (const char* prefix : {"cell_9.", "cell_10.", "cell_11.", "last_linear."})
      if (k.rfind(prefix, 0) == 0) return true;
    return false;
  };
  for (const auto& k : names)
    if (inRecipe(k)) expected.insert(k);
  EXPECT_EQ(expected.size(), 291u);  // timm's state-dict entries under those four prefixes
  EXPECT_EQ(changed, expected);
}

TEST(TrainStepTest, RollBackRestoresTheBuffersOfABegunStep) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  TrainStep step(model, StepOptions{}, *comm);
  step.setTrainingMode();
  const auto before = snapshot(model, step);
  step.begin();
  step.backward(torch::randn({4, 3, 24, 24}), torch::randint(0, 5, {4}, torch::kLong), 1.0);
  EXPECT_FALSE(sameState(before, snapshot(model, step)));  // the BN statistics moved
  EXPECT_TRUE(step.rollBack());
  EXPECT_TRUE(sameState(before, snapshot(model, step)));
}

TEST(TrainStepTest, StateFiniteSeesAnInfiniteWeight) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  TrainStep step(model, StepOptions{}, *comm);
  EXPECT_TRUE(step.stateFinite());
  torch::NoGradGuard noGrad;
  model->named_parameters()["fc.weight"][0][0] = INFINITY;
  EXPECT_FALSE(step.stateFinite());
}

// The finiteness check sums each tensor first: a finite sum proves it finite. Finite elements
// whose float sum overflows must still count as finite, and one NaN or infinity among them not.
TEST(TrainStepTest, StateFiniteIsExactWhenTheSumOverflows) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  TrainStep step(model, StepOptions{}, *comm);
  torch::NoGradGuard noGrad;
  auto w = model->named_parameters()["fc.weight"];
  w.fill_(3e38f);  // each element finite (float max 3.4e38), the float sum of them is not
  ASSERT_FALSE(std::isfinite(w.sum().item<float>()));
  EXPECT_TRUE(step.stateFinite());
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    w.fill_(3e38f);
    w[1][2] = bad;
    EXPECT_FALSE(step.stateFinite()) << bad;
    w.fill_(0.5f);
    w[1][2] = bad;
    EXPECT_FALSE(step.stateFinite()) << bad;
  }
}

// A finite loss whose gradients overflow (a loss scale too large) is dropped like a non-finite
// loss, and leaves the model as it was.
TEST(TrainStepTest, AStepWithInfiniteGradientsAndAFiniteLossIsNotApplied) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  StepOptions so;
  TrainStep step(model, so, *comm);
  step.setTrainingMode();
  torch::manual_seed(3);
  auto x = torch::randn({4, 3, 24, 24});
  auto y = torch::randint(0, 5, {4}, torch::kLong);
  step.step(x, y, 0.1);
  const auto before = snapshot(model, step);
  step.begin();
  const double loss = step.backward(x, y, 1e300).item<double>();  // the scaled float loss is +inf
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_EQ(step.finish(0.1, true), StepResult::kNotFinite);
  EXPECT_TRUE(sameState(before, snapshot(model, step)));
}

TEST(TrainStepTest, ParsesPrecisionAndMemoryFormat) {
  EXPECT_EQ(parsePrecision("auto", torch::kCPU), Precision::kFp32);
  EXPECT_EQ(parsePrecision("auto", torch::Device(torch::kCUDA, 0)), Precision::kBf16);
  EXPECT_EQ(parsePrecision("bf16", torch::kCPU), Precision::kBf16);
  EXPECT_FALSE(parseChannelsLast("auto", torch::kCPU));
  EXPECT_TRUE(parseChannelsLast("auto", torch::Device(torch::kCUDA, 0)));
  EXPECT_TRUE(parseChannelsLast("channels-last", torch::kCPU));
  EXPECT_EQ(parsePrecision("fp16", torch::Device(torch::kCUDA, 0)), Precision::kFp16);
  // LibTorch 1.13's CPU autocast has no fp16: refused, naming the flag.
  EXPECT_THROW(parsePrecision("fp16", torch::kCPU), UsageError);
  EXPECT_THROW(parsePrecision("fp8", torch::kCPU), UsageError);
  EXPECT_THROW(parseChannelsLast("nhwc", torch::kCPU), UsageError);
}

// StepTally against the rules of --nan-policy, written out: stop halts at the first step that is
// not finite; skip halts at the step that makes more than n in a row; once halted, every step is
// skipped; the losses of the steps not skipped are summed; an overflow counts its loss.
TEST(StepTallyTest, CountsLossesAndSkipsAndHaltsAsTheNanPolicySays) {
  auto kind = [](NonFinite k) { return torch::full({}, static_cast<double>(k)); };
  auto loss = [](double v) { return torch::full({}, v, torch::kDouble); };
  const auto ok = kind(NonFinite::kNone);
  StepTally stop(torch::kCPU, 0);
  std::vector<bool> skips;
  for (auto [l, k] : {std::pair{1.0, ok}, {2.0, ok}, {NAN, kind(NonFinite::kNanLoss)}, {3.0, ok}})
    skips.push_back(stop.record(loss(l), k, false).item<bool>());
  EXPECT_EQ(skips, (std::vector<bool>{false, false, true, true}));
  StepWindow w = stop.take();
  EXPECT_EQ(w.steps, 4);
  EXPECT_EQ(w.applied, 2);
  EXPECT_EQ(w.skipped, 2);
  EXPECT_EQ(w.lossSum, 3.0);
  EXPECT_EQ(w.lossCount, 2);
  EXPECT_EQ(w.firstSkipped, 2);
  EXPECT_EQ(w.firstKind, NonFinite::kNanLoss);
  EXPECT_EQ(w.haltedAt, 2);
  EXPECT_FALSE(w.lastApplied);
  EXPECT_EQ(w.deviceSkips, 0);
  // Halted for good: the next window's good step is skipped too, and no new halt is reported.
  EXPECT_TRUE(stop.record(loss(1.0), ok, true).item<bool>());
  w = stop.take();
  EXPECT_EQ(w.haltedAt, -1);
  EXPECT_EQ(w.deviceSkips, 1);

  StepTally skip(torch::kCPU, 2);
  const auto bad = kind(NonFinite::kGradient);
  skips.clear();
  for (const auto& k : {bad, bad, ok, bad, bad, bad, ok})
    skips.push_back(skip.record(loss(1.0), k, false).item<bool>());
  // In a row: 1, 2, 0, 1, 2, 3 (> 2: halts at index 5), then halted.
  EXPECT_EQ(skips, (std::vector<bool>{true, true, false, true, true, true, true}));
  w = skip.take();
  EXPECT_EQ(w.applied, 1);
  EXPECT_EQ(w.skipped, 6);
  EXPECT_EQ(w.firstSkipped, 0);
  EXPECT_EQ(w.firstKind, NonFinite::kGradient);
  EXPECT_EQ(w.haltedAt, 5);
  EXPECT_EQ(w.haltKind, NonFinite::kGradient);
  EXPECT_EQ(w.lossSum, 1.0);

  StepTally scaled(torch::kCPU, 0);
  scaled.record(loss(2.0), ok, false);
  scaled.noteOverflow();
  scaled.record(loss(4.0), ok, false);
  w = scaled.take();
  EXPECT_EQ(w.applied, 1);
  EXPECT_EQ(w.overflows, 1);
  EXPECT_EQ(w.skipped, 0);
  EXPECT_EQ(w.lossSum, 6.0);
  EXPECT_EQ(w.lossCount, 2);
}

// The state after a run of steps: parameters, buffers, optimizer state and (AdamW) step counts.
// `omit`: the poisoned batches are drawn but not stepped on.
std::vector<torch::Tensor> stateAfterSteps(optim::OptimizerKind kind, SkipOn skipOn,
                                           const std::vector<bool>& poisoned, StepWindow* window,
                                           bool omit = false) {
  auto comm = distributed::makeSingleProcessCommunicator();
  auto model = tinyModel();
  StepOptions so;
  so.learningRate = 0.05;
  so.optimizer = kind;
  so.nesterov = kind == optim::optimizerNamed("sgd");
  so.weightDecay = 0.01;
  so.optimizerImpl = optim::OptimizerImpl::kFused;
  so.maxSkippedInARow = 10;
  so.skipOn = skipOn;
  TrainStep step(model, so, *comm);
  step.setTrainingMode();
  torch::manual_seed(5);
  for (bool bad : poisoned) {
    auto x = torch::randn({4, 3, 24, 24});
    const auto y = torch::randint(0, 5, {4}, torch::kLong);
    if (bad) x[0][0][0][0] = NAN;  // the loss and the BN statistics go NaN
    if (bad && omit) continue;
    step.begin();
    step.backward(x, y, 1.0);
    const StepResult r = step.finish(0.05);
    EXPECT_EQ(r == StepResult::kPending, skipOn == SkipOn::kDevice);
  }
  *window = step.takeWindow();
  // Parameters, buffers, then each parameter's optimizer state in parameter order (LibTorch's
  // state map has no order that two models share).
  std::vector<torch::Tensor> out;
  for (auto& t : model->parameters()) out.push_back(t.detach().clone());
  for (auto& t : model->buffers()) out.push_back(t.clone());
  for (auto& p : model->parameters()) {
    auto* s = optim::parameterState(step.optimizer(), p);
    if (!s) continue;
    if (kind == optim::optimizerNamed("sgd")) {
      out.push_back(static_cast<torch::optim::SGDParamState&>(*s).momentum_buffer().clone());
    } else {
      auto& a = static_cast<torch::optim::AdamWParamState&>(*s);
      out.push_back(a.exp_avg().clone());
      out.push_back(a.exp_avg_sq().clone());
      out.push_back(torch::tensor(a.step()));
    }
  }
  return out;
}

// A skipped step is no step: skipped on the host or on the device (the fused kernel's found_inf,
// the buffers restored, AdamW's step counts put back), the state is the one of the same run
// with the poisoned batches left out (the first step of SGD's momentum included).
TEST(StepSkipTest, SkippedOnTheDeviceEqualsSkippedOnTheHost) {
  for (optim::OptimizerKind kind : {optim::optimizerNamed("sgd"), optim::optimizerNamed("adamw")}) {
    FIXRES_SKIP_UNLESS(optim::hasFusedKernel(kind), "fused-optimizer",
                       "LibTorch 1.13 has no fused optimizer kernel to skip on the device");
    const std::vector<bool> poisoned = {true, false, false, true, false};
    StepWindow host, device;
    const auto h = stateAfterSteps(kind, SkipOn::kHost, poisoned, &host);
    const auto d = stateAfterSteps(kind, SkipOn::kDevice, poisoned, &device);
    EXPECT_TRUE(sameState(h, d)) << choiceName(optim::optimizerKinds(), kind);
    for (const StepWindow& w : {host, device}) {
      EXPECT_EQ(w.applied, 3);
      EXPECT_EQ(w.skipped, 2);
      EXPECT_EQ(w.firstSkipped, 0);
      EXPECT_EQ(w.firstKind, NonFinite::kNanLoss);
      EXPECT_EQ(w.haltedAt, -1);
      EXPECT_TRUE(std::isfinite(w.lossSum));
    }
    EXPECT_EQ(host.lossSum, device.lossSum);
    EXPECT_EQ(device.deviceSkips, 2);
    StepWindow none;
    const auto n = stateAfterSteps(kind, SkipOn::kHost, poisoned, &none, /*omit=*/true);
    EXPECT_TRUE(sameState(n, h)) << choiceName(optim::optimizerKinds(), kind);
    EXPECT_EQ(none.applied, 3);
  }
}

TEST(StepSkipTest, DeviceSkipWithoutAFusedKernelIsAUsageError) {
  auto comm = distributed::makeSingleProcessCommunicator();
  StepOptions so;
  so.optimizer = optim::optimizerNamed("rmsprop");
  so.skipOn = SkipOn::kDevice;
  EXPECT_THROW(TrainStep(tinyModel(), so, *comm), UsageError);
}

}  // namespace
}  // namespace fixres::engine
