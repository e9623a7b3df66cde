// The step and forward-pass timing loops of the benchmarks.
#include "fixres/step/StepBench.h"

#include <chrono>
#include <cmath>

#include "fixres/runtime/Precision.h"

namespace fixres::engine {
namespace {

using StepBenchClock = std::chrono::steady_clock;
double stepBenchSeconds(StepBenchClock::time_point t) {
  return std::chrono::duration<double>(StepBenchClock::now() - t).count();
}

// The learning rate of the benchmarked updates.
constexpr double kStepBenchLr = 0.01;

// Every kernel queued on `device` done, then every rank of `comm` there.
void stepBenchSync(const torch::Device& device, distributed::Communicator& comm) {
  if (device.is_cuda()) torch::cuda::synchronize();
  comm.barrier();
}

}  // namespace

StepTimings timeTrainSteps(TrainStep& step, const torch::Tensor& x, const torch::Tensor& y,
                           int warmup, int steps, distributed::Communicator& comm,
                           const torch::Device& device) {
  step.setTrainingMode();
  for (int i = 0; i < warmup; ++i) step.stepAsync(x, y, kStepBenchLr);
  step.takeWindow();
  stepBenchSync(device, comm);
  StepTimings t;
  const auto t0 = StepBenchClock::now();
  for (int i = 0; i < steps; ++i) {
    auto ta = StepBenchClock::now();
    if (step.capturesSteps()) {  // one replay: no parts to time
      step.stepAsync(x, y, kStepBenchLr);
      t.finish += stepBenchSeconds(ta);
      continue;
    }
    step.begin();
    t.begin += stepBenchSeconds(ta);
    ta = StepBenchClock::now();
    step.backward(x, y, 1.0);
    t.backward += stepBenchSeconds(ta);
    ta = StepBenchClock::now();
    step.finish(kStepBenchLr);
    t.finish += stepBenchSeconds(ta);
  }
  step.takeWindow();  // as a run reads its steps (every --log-every of them)
  stepBenchSync(device, comm);
  t.seconds = stepBenchSeconds(t0);
  return t;
}

EvalTimings timeEvalBatches(models::Model& model, const torch::Tensor& x, int warmup, int steps,
                            const RunDevice& run) {
  model->eval();
  torch::NoGradGuard noGrad;
  AutocastGuard autocast(run.device, run.numerics.precision);
  torch::Tensor acc = torch::zeros({}, torch::TensorOptions().device(run.device));
  auto once = [&] { acc.add_(model->forward(x).sum().to(torch::kFloat)); };
  for (int i = 0; i < warmup; ++i) once();
  acc.item<double>();
  EvalTimings t;
  const auto t0 = StepBenchClock::now();
  for (int i = 0; i < steps; ++i) once();
  t.checksum = acc.item<double>();
  t.seconds = stepBenchSeconds(t0);
  return t;
}

}  // namespace fixres::engine
