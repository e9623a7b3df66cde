// `fixres bench`: benchmarks that end with one `<number> <unit>` line, for make bench and the
// peer comparisons (bench/): train (the real training step), allreduce (bucketed reducer vs
// plain per-tensor all-reduce), data (decode + transform + collate).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "fixres/cli/Command.h"
#include "fixres/cli/Options.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Log.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/models/Registry.h"
#include "fixres/step/StepBench.h"
#include "fixres/step/TrainStep.h"

namespace fixres::cli {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// What a model-throughput benchmark runs: which model, on what random batch, how many times.
struct BenchShape {
  engine::ModelSpec model;
  int inputSize = 224, batch = 32;
  engine::BenchLoop loop;
  engine::NumericsOptions numerics;
  bool cpu = false;
  BenchShape() {
    model.architecture = "resnet50";
    model.numClasses = 1000;
  }
};

void addBenchShapeOptions(CLI::App& sub, BenchShape& b) {
  addConfigFile(sub);
  bindSetting(sub, engine::kArchitectureRow, b.model.architecture);
  bindSetting(sub, engine::kInputSizeRow, b.inputSize);
  bindSetting(sub, engine::kBatchRow, b.batch);
  engine::BenchLoop::visitSettings(b.loop, SettingsBinder{sub});
  bindSetting(sub, engine::kNumClassesRow, b.model.numClasses);
  addNumericsOptions(sub, b.numerics);
  bindSetting(sub, kCpuRow, b.cpu);
}

// The model (seeded, built as every subcommand builds it) and a random input batch.
std::pair<models::Model, torch::Tensor> benchModel(const BenchShape& b,
                                                   const engine::RunDevice& run) {
  auto model =
      engine::buildModel(engine::resolvedForSizes(b.model, {b.inputSize}), b.model.numClasses, run)
          .model;
  auto x = torch::randn({b.batch, 3, b.inputSize, b.inputSize},
                        torch::TensorOptions().device(run.device))
               .contiguous(run.numerics.channelsLast ? at::MemoryFormat::ChannelsLast
                                                     : at::MemoryFormat::Contiguous);
  return {model, x};
}

Command addBenchTrain(CLI::App& bench) {
  auto* sub = bench.add_subcommand(
      "train", "The training step (forward, loss, backward, reduce, optimizer) on random data");
  struct State {
    BenchShape shape;
    engine::StepOptions step;  // the run's defaults; --sync-bn and the all-reduce's rows
    ClusterOptions cluster;
  };
  auto s = std::make_shared<State>();
  addBenchShapeOptions(*sub, s->shape);
  bindSetting(*sub, kFinetuneRow, s->step.finetune);
  bindSetting(*sub, engine::kSyncBnRow, s->step.syncBatchNorm);
  bindSetting(*sub, engine::kOptRow, s->step.optimizer, optim::optimizerKinds());
  bindSetting(*sub, engine::kOptimizerImplRow, s->step.optimizerImpl, optim::optimizerImpls());
  bindSetting(*sub, engine::kSkipOnRow, s->step.skipOn, engine::skipOnChoices());
  bindSetting(*sub, engine::kCudaGraphRow, s->step.cudaGraph, engine::graphModes());
  distributed::ReducerOptions::visitSettings(s->step.reducer, SettingsBinder{*sub});
  addClusterOptions(*sub, s->cluster);
  return {sub, [s]() -> int {
            const BenchShape& b = s->shape;
            auto rank = connectRank(s->cluster, b.cpu, b.numerics);
            auto& comm = rank.comm;
            const auto device = rank.run.device;
            auto [model, x] = benchModel(b, rank.run);
            engine::StepOptions so = s->step;
            so.precision = rank.run.numerics.precision;
            engine::TrainStep step(model, so, *comm);
            auto y = torch::randint(0, b.model.numClasses, {b.batch},
                                    torch::TensorOptions().dtype(torch::kLong).device(device));
            const auto t =
                engine::timeTrainSteps(step, x, y, b.loop.warmup, b.loop.steps, *comm, device);
            const double dt = t.seconds;
            double ips = static_cast<double>(b.loop.steps) * b.batch * comm->worldSize() / dt;
            if (!device.is_cuda()) {
              char line[160];
              std::snprintf(line, sizeof line,
                            "begin %.1f, forward+backward %.1f, finish (reduce wait, update) %.1f",
                            1000 * t.begin / b.loop.steps, 1000 * t.backward / b.loop.steps,
                            1000 * t.finish / b.loop.steps);
              log::info("bench train: rank ", comm->rank(), " ms/step: ", line);
            }
            if (comm->rank() == 0) {
              std::printf(
                  "bench train %s size %d batch %d x %d processes, %d threads, %s, %s: %.3f "
                  "s/step\n",
                  b.model.architectureOrDefault().c_str(), b.inputSize, b.batch, comm->worldSize(),
                  torch::get_num_threads(), device.str().c_str(),
                  engine::precisionName(so.precision), dt / b.loop.steps);
              std::printf("%.2f img/s\n", ips);
            }
            return 0;
          }};
}

Command addBenchEval(CLI::App& bench) {
  auto* sub = bench.add_subcommand(
      "eval", "Inference throughput (forward only, eval mode, no gradients) on random data");
  struct State {
    BenchShape shape;
  };
  auto s = std::make_shared<State>();
  s->shape.batch = 64;
  addBenchShapeOptions(*sub, s->shape);
  return {
      sub, [s]() -> int {
        const BenchShape& b = s->shape;
        const auto run = engine::makeRunDevice(0, b.cpu, b.numerics);
        auto setup = benchModel(b, run);
        const auto t =
            engine::timeEvalBatches(setup.first, setup.second, b.loop.warmup, b.loop.steps, run);
        std::printf(
            "bench eval %s size %d batch %d, %d threads, %s, %s, %s, %s: %.4f s/batch\n",
            b.model.architectureOrDefault().c_str(), b.inputSize, b.batch, torch::get_num_threads(),
            run.device.str().c_str(), engine::runtimeName(run.numerics.runtime),
            engine::precisionName(run.numerics.precision),
            run.numerics.channelsLast ? "channels-last" : "contiguous", t.seconds / b.loop.steps);
        FIXRES_CHECK(std::isfinite(t.checksum), InternalError, "non-finite logits in bench eval");
        std::printf("%.2f img/s\n", static_cast<double>(b.loop.steps) * b.batch / t.seconds);
        return 0;
      }};
}

Command addBenchAllreduce(CLI::App& bench) {
  auto* sub = bench.add_subcommand(
      "allreduce", "Gradient all-reduce of a model's parameters: bucketed reducer vs per-tensor");
  struct State {
    std::string architecture = "resnet50";
    engine::BenchLoop loop{5, 0};
    distributed::ReducerOptions reducer;
    ClusterOptions cluster;
  };
  auto s = std::make_shared<State>();
  addConfigFile(*sub);
  bindSetting(*sub, engine::kArchitectureRow, s->architecture);
  engine::BenchLoop::visitSettings(s->loop, SettingsBinder{*sub});
  bindSetting(*sub, distributed::kBucketMbRow, s->reducer.bucketMb);
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s]() -> int {
        auto rank = connectRank(s->cluster, false, engine::NumericsOptions{});
        auto& comm = rank.comm;
        auto model = models::createModel(s->architecture, 1000);
        model->to(comm->device());
        std::vector<torch::Tensor> params;
        int64_t bytes = 0;
        for (auto& p : model->parameters()) {
          p.mutable_grad() = torch::randn_like(p);
          params.push_back(p);
          bytes += p.numel() * p.element_size();
        }
        distributed::ReducerOptions ro = s->reducer;
        ro.firstBucketBytes = ro.bucketBytes();  // every bucket of the one size measured
        distributed::GradReducer reducer(*comm, params, ro);
        auto timeIt = [&](auto&& fn) {
          fn();
          comm->barrier();
          auto t0 = Clock::now();
          for (int i = 0; i < s->loop.steps; ++i) fn();
          comm->barrier();
          return since(t0) / s->loop.steps;
        };
        double bucketed = timeIt([&] { reducer.reduce(); });
        double plain = timeIt([&] {
          for (auto& p : params) {
            auto g = p.grad();
            comm->allReduceSum(g);
            g.div_(comm->worldSize());
          }
        });
        const int n = comm->worldSize();
        auto busbw = [&](double t) { return bytes / t * 2.0 * (n - 1) / std::max(1, n) / 1e9; };
        if (comm->rank() == 0) {
          std::printf("allreduce %s: %zu tensors, %.1f MB, %d ranks, %s\n", s->architecture.c_str(),
                      params.size(), bytes / 1e6, n, comm->backendName().c_str());
          std::printf("plain per-tensor: %.4f s  bus bandwidth %.3f GB/s\n", plain, busbw(plain));
          std::printf("bucketed (%zu buckets): %.4f s  bus bandwidth %.3f GB/s  speedup %.2fx\n",
                      reducer.bucketCount(), bucketed, busbw(bucketed), plain / bucketed);
          std::printf("%.3f GB/s\n", busbw(bucketed));
        }
        return 0;
      }};
}

}  // namespace

// Defined in BenchDataCommand.cpp: `fixres bench data`.
void addBenchDataSubcommand(CLI::App& bench, std::function<int()>& action);

Command addBenchCommand(CLI::App& parent) {
  auto* sub =
      parent.add_subcommand("bench", "Benchmarks: train step, eval, all-reduce, data pipeline");
  sub->require_subcommand(1);
  std::vector<Command> subs = {addBenchTrain(*sub), addBenchEval(*sub), addBenchAllreduce(*sub)};
  auto dataAction = std::make_shared<std::function<int()>>();
  addBenchDataSubcommand(*sub, *dataAction);
  return {sub, [subs, dataAction]() -> int {
            for (const auto& c : subs)
              if (c.app->parsed()) return c.run();
            if (*dataAction) return (*dataAction)();
            FIXRES_FAIL(UsageError, "bench needs a benchmark: train, eval, allreduce or data");
          }};
}

}  // namespace fixres::cli
