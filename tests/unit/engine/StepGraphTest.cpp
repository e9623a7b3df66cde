// --cuda-graph's decision, against the list of what a captured step cannot hold: one condition
// at a time, each named; `on` refuses what `auto` falls back from; the CPU never captures.
#include <gtest/gtest.h>

#include <string>

#include "fixres/common/Error.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/models/Registry.h"
#include "fixres/step/StepGraph.h"
#include "fixres/step/TrainStep.h"

namespace fixres::engine {
namespace {

GraphConditions capturable() {
  GraphConditions c;
  c.cuda = true;
  c.buildHasGraphs = true;
  c.deviceSkip = true;
  c.optimizer = optim::optimizerNamed("sgd");
  c.impl = optim::OptimizerImpl::kFused;
  return c;
}

TEST(StepGraphTest, CapturesOnlyWhatAGraphCanReplayAndNamesWhyNot) {
  EXPECT_EQ(whyNoGraph(capturable()), "");
  struct Case {
    void (*change)(GraphConditions&);
    const char* why;
  };
  const Case cases[] = {
      {[](GraphConditions& c) { c.cuda = false; }, "CPU"},
      {[](GraphConditions& c) { c.buildHasGraphs = false; }, "no CUDA"},
      {[](GraphConditions& c) { c.worldSize = 2; }, "several ranks"},
      {[](GraphConditions& c) { c.accumulationSteps = 4; }, "--accumulation-steps"},
      {[](GraphConditions& c) { c.syncBatchNorm = true; }, "--sync-bn"},
      {[](GraphConditions& c) { c.lossScaling = true; }, "fp16 loss scaling"},
      {[](GraphConditions& c) { c.optimizer = optim::optimizerNamed("adamw"); }, "AdamW"},
      {[](GraphConditions& c) { c.impl = optim::OptimizerImpl::kForeach; }, "foreach"},
      {[](GraphConditions& c) { c.deviceSkip = false; }, "--skip-on host"},
  };
  for (const auto& k : cases) {
    GraphConditions c = capturable();
    k.change(c);
    const std::string why = whyNoGraph(c);
    EXPECT_NE(why.find(k.why), std::string::npos) << why;
    std::string got;
    EXPECT_FALSE(planStepGraph(GraphMode::kAuto, c, &got));
    EXPECT_EQ(got, why);
    EXPECT_THROW(planStepGraph(GraphMode::kOn, c, &got), UsageError) << k.why;
    EXPECT_FALSE(planStepGraph(GraphMode::kOff, c, &got));
    EXPECT_EQ(got, "");
  }
  std::string got = "stale";
  EXPECT_TRUE(planStepGraph(GraphMode::kAuto, capturable(), &got));
  EXPECT_EQ(got, "");
  EXPECT_FALSE(planStepGraph(GraphMode::kOff, capturable(), &got));
}

// A TrainStep on the CPU: auto steps eagerly and says why; on is a usage error naming the CPU.
TEST(StepGraphTest, ATrainStepOnTheCpuRunsEagerly) {
  auto comm = distributed::makeSingleProcessCommunicator();
  StepOptions so;
  TrainStep step(models::createModel("resnet_tiny", 5), so, *comm);
  EXPECT_FALSE(step.capturesSteps());
  EXPECT_NE(step.whyNotCaptured().find("CPU"), std::string::npos);
  so.cudaGraph = GraphMode::kOn;
  try {
    TrainStep refused(models::createModel("resnet_tiny", 5), so, *comm);
    ADD_FAILURE() << "--cuda-graph on was accepted on the CPU";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--cuda-graph on: the step runs on the CPU"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fixres::engine
