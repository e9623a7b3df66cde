// LARS and LAMB, the optimizers added as descriptors: 20 steps of each equal timm.optim's Lars and
// Lamb (tests/reference/timm_optim_reference.py: the same resnet_tiny weights and batches as
// optim_reference.py, norm layers and biases in groups without weight decay), a checkpoint in
// the middle resumes bitwise, and the paths they lack are refused naming the flag.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"
#include "fixres/optim/MultiTensorStep.h"
#include "fixres/step/Checkpoint.h"
#include "fixres/step/TrainStep.h"

namespace fixres::engine {
namespace lars_lamb_test {

constexpr int kClasses = 5;
constexpr int kBatches = 5;
constexpr int kSteps = 20;

// The reference's folder; "" when no timm could be imported (the script prints "no timm").
const std::string& timmReferenceDir() {
  static const std::string dir = [] {
    std::string made;
    const std::string oracles = std::string(FIXRES_SOURCE_DIR) + "/../shared/oracles";
    testing::cachedReference("timm_optim_reference.py", "{dir} " + oracles, &made);
    return std::filesystem::exists(made + "/timm.json") ? made : std::string();
  }();
  return dir;
}

// Skips (or fails, where FIXRES_REQUIRE asks for timm) when there is no timm to compare with.
#define NEED_TIMM()                                                                        \
  FIXRES_SKIP_UNLESS(!timmReferenceDir().empty(),                                          \
                     std::string(FIXRES_PYTHON_COMMAND).find(".venv") != std::string::npos \
                         ? "timm-pypi"                                                     \
                         : "oracles",                                                      \
                     "no timm.optim for the reference Python (neither installed nor in "   \
                     "../shared/oracles)")

c10::IValue referenceFile(const std::string& name) {
  return models::readTorchFile(timmReferenceDir() + "/" + name);
}

models::Model initialModel() {
  models::Model model = models::createModel("resnet_tiny", kClasses);
  models::loadStateDict(*model, referenceFile("init.pth"), models::LoadOptions{}, "init.pth");
  return model;
}

struct Case {
  const char* name;  // timm_optim_reference.py's CASES
  const char* opt;
  double lr, momentum, weightDecay;
  bool nesterov;
  std::map<std::string, double> own;  // the optimizer's own settings given (else defaults)
};
const Case kCases[] = {
    {"lars", "lars", 2.0, 0.9, 1e-2, false, {}},
    {"lars_nesterov", "lars", 1.0, 0.9, 5e-2, true, {}},
    {"lamb", "lamb", 2e-2, 0.0, 1e-2, false, {}},
    // The descriptors' own rows away from timm's defaults: trust_coeff=0.01, betas=(0.8, 0.99).
    {"lars_trust", "lars", 0.5, 0.9, 1e-2, false, {{"lars_trust_coeff", 0.01}}},
    {"lamb_betas", "lamb", 2e-2, 0.0, 1e-2, false, {{"lamb_beta1", 0.8}, {"lamb_beta2", 0.99}}},
};

StepOptions stepOptions(const Case& c) {
  StepOptions so;
  so.optimizer = optim::optimizerNamed(c.opt);
  so.learningRate = c.lr;
  so.momentum = c.momentum;
  so.weightDecay = c.weightDecay;
  so.nesterov = c.nesterov;
  for (const auto& [key, value] : c.own) so.optimizerParams.at(key) = value;
  return so;  // norm layers and biases: the optimizer's own default (no decay)
}

void run(TrainStep& step, const Case& c, int from, int to) {
  static const c10::IValue data = referenceFile("data.pth");
  step.setTrainingMode();
  for (int k = from; k < to; ++k) {
    const std::string b = std::to_string(k % kBatches);
    step.step(testing::referenceTensor(data, "x" + b), testing::referenceTensor(data, "y" + b),
              c.lr);
    ASSERT_EQ(step.lastResult(), StepResult::kApplied);
  }
}

// Largest |ours - reference| / max(1, max |reference|) over the state dict's entries.
double maxDiff(models::Model& model, const c10::IValue& ref) {
  double worst = 0;
  for (const auto& item : models::stateDict(*model)) {
    const auto r = testing::referenceTensor(ref, item.key()).to(torch::kDouble);
    const double scale = std::max(1.0, r.abs().max().item<double>());
    worst =
        std::max(worst, (item.value().to(torch::kDouble) - r).abs().max().item<double>() / scale);
  }
  return worst;
}

TEST(LarsLambTest, TwentyStepsEqualTimmOptim) {
  NEED_TIMM();
  const auto made = nlohmann::json::parse(testing::readText(timmReferenceDir() + "/timm.json"));
  ASSERT_EQ(made.at("steps").get<int>(), kSteps);
  auto comm = distributed::makeSingleProcessCommunicator();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    models::Model model = initialModel();
    TrainStep step(model, stepOptions(c), *comm);
    run(step, c, 0, kSteps);
    const double diff = maxDiff(model, referenceFile(std::string(c.name) + "20.pth"));
    std::cout << "[ measure ] " << c.name << " vs timm " << made.at("timm").get<std::string>()
              << " (" << made.at("from").get<std::string>() << ", torch "
              << made.at("torch").get<std::string>() << "): max relative |difference| after "
              << kSteps << " steps = " << diff << "\n";
    // The same arithmetic in the same order: equal but for float32 rounding of reductions (the
    // norms of the trust ratio, BatchNorm's statistics), which 20 steps carry along. 1e-5 on
    // values of order 1; a step's move is above 1e-3 (checked next), so a wrong formula fails.
    EXPECT_LT(diff, 1e-5);
    EXPECT_GT(maxDiff(model, referenceFile("init.pth")), 1e-3);
  }
}

// A checkpoint after 8 of 20 steps, loaded into a fresh model and step: the other 12 steps end
// bitwise where 20 uninterrupted ones do; the file holds the state under the documented keys.
TEST(LarsLambTest, CheckpointResumesBitwise) {
  NEED_TIMM();
  auto comm = distributed::makeSingleProcessCommunicator();
  const std::string dir = testing::makeTempDir("fixres_larslamb_");
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const StepOptions so = stepOptions(c);
    models::Model whole = initialModel();
    TrainStep wholeStep(whole, so, *comm);
    run(wholeStep, c, 0, kSteps);

    models::Model first = initialModel();
    TrainStep firstStep(first, so, *comm);
    run(firstStep, c, 0, 8);
    const std::string path = dir + "/" + c.name + ".pth";
    saveCheckpoint(path, CheckpointState{}, *first,
                   {firstStep.optimizer(), firstStep.optimizerKind(), nullptr});
    models::Model second = models::createModel("resnet_tiny", kClasses);
    TrainStep secondStep(second, so, *comm);
    loadCheckpoint(path, *second, {secondStep.optimizer(), secondStep.optimizerKind(), nullptr});
    run(secondStep, c, 8, kSteps);
    const auto a = models::stateDict(*whole), b = models::stateDict(*second);
    for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b.at(item.key())));
    const auto sa = optim::optimizerState(*whole, wholeStep.optimizer(), so.optimizer);
    const auto sb = optim::optimizerState(*second, secondStep.optimizer(), so.optimizer);
    ASSERT_EQ(sa.size(), sb.size());
    for (const auto& item : sa) EXPECT_TRUE(torch::equal(item.value(), sb.at(item.key())));

    auto d = models::readTorchFile(path).toGenericDict();
    EXPECT_EQ(d.at("optimizer_kind").toStringRef(), c.opt);
    auto opt = d.at("optimizer").toGenericDict();
    if (std::string(c.opt) == "lars") {
      EXPECT_TRUE(opt.contains("momentum_buffer/fc.weight"));
    } else {
      EXPECT_TRUE(opt.contains("exp_avg_sq/fc.weight"));
      EXPECT_EQ(opt.at("step/fc.weight").toTensor().item<int64_t>(), 8);
    }
  }
}

// Norm layers and biases take no weight decay under LARS and LAMB unless the flags say so; the
// update paths they lack (foreach, fused) are refused when the step is made, naming the flag.
TEST(LarsLambTest, GroupsAndPathsAreTheDescriptors) {
  models::Model model = models::createModel("resnet_tiny", kClasses);
  for (const char* name : {"lars", "lamb"}) {
    SCOPED_TRACE(name);
    optim::OptimizerOptions o;
    o.kind = optim::optimizerNamed(name);
    o.weightDecay = 0.1;
    auto groups = optim::parameterGroups(*model, o);
    ASSERT_EQ(groups.size(), 3u);  // other, norm, bias
    EXPECT_EQ(groups[0].weightDecay, 0.1);
    EXPECT_EQ(groups[1].role, "norm");
    EXPECT_EQ(groups[1].weightDecay, 0);
    EXPECT_EQ(groups[2].weightDecay, 0);
    o.normWeightDecay = 0.5;
    EXPECT_EQ(optim::parameterGroups(*model, o)[1].weightDecay, 0.5);
    EXPECT_EQ(optim::resolveOptimizerImpl(optim::OptimizerImpl::kAuto, o.kind),
              optim::OptimizerImpl::kLoop);
    auto comm = distributed::makeSingleProcessCommunicator();
    StepOptions so;
    so.optimizer = o.kind;
    for (auto impl : {optim::OptimizerImpl::kForeach, optim::OptimizerImpl::kFused}) {
      so.optimizerImpl = impl;
      try {
        TrainStep step(models::createModel("resnet_tiny", kClasses), so, *comm);
        ADD_FAILURE() << "accepted";
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--optimizer-impl"), std::string::npos) << e.what();
      }
    }
  }
  // SGD keeps the references' grouping: without the flags, one group.
  optim::OptimizerOptions sgd;
  EXPECT_EQ(optim::parameterGroups(*model, sgd).size(), 1u);
}

}  // namespace lars_lamb_test
}  // namespace fixres::engine
