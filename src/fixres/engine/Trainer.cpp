// Training and FixRes fine-tuning loop.
#include "fixres/engine/Trainer.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Loader.h"
#include "fixres/data/Sampler.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {
namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

Trainer::Trainer(RunConfig cfg, distributed::Communicator& comm, torch::Device device)
    : cfg_(std::move(cfg)), comm_(comm), device_(device) {
  cfg_.validate();
  train_ = data::openImageFolder(cfg_.trainPath);
  if (!cfg_.valPath.empty()) {
    val_ = data::openImageFolder(cfg_.valPath);
    data::checkSameClasses(*train_, *val_);
  }
  const int64_t classes =
      cfg_.numClasses > 0 ? cfg_.numClasses : static_cast<int64_t>(train_->classes().size());
  torch::manual_seed(cfg_.seed);  // same initial weights on every rank (and broadcast anyway)
  model_ = models::createModel(cfg_.architecture, classes);
  if (!cfg_.weightPath.empty()) {
    models::LoadOptions lo;
    lo.skipClassifier = cfg_.skipClassifier;
    auto report = models::loadWeightsFile(*model_, cfg_.weightPath, lo);
    log::info("loaded ", report.loaded, " tensors from ", cfg_.weightPath,
              report.skipped.empty() ? "" : " (classifier re-initialised)");
  }
  model_->to(device_);
  precision_ = parsePrecision(cfg_.precision, device_);
  channelsLast_ = parseChannelsLast(cfg_.memoryFormat, device_);
  normalizeOnDevice_ = parseNormalizeOnDevice(cfg_.normalizeOn, device_);
  if (channelsLast_) useChannelsLast(*model_);

  // The reference's linear scaling counts the images of one optimizer step.
  scaledLr_ = cfg_.absoluteLr
                  ? cfg_.learningRate
                  : fixresScaledLr(cfg_.learningRate, cfg_.batch * cfg_.accumulationSteps,
                                   comm_.worldSize());
  StepOptions st;
  st.learningRate = scaledLr_;
  st.momentum = cfg_.momentum;
  st.weightDecay = cfg_.weightDecay;
  st.nesterov = cfg_.nesterov;
  st.labelSmoothing = cfg_.labelSmoothing;
  st.finetune = cfg_.mode == RunMode::kFinetune;
  st.finetuneBnAffine = cfg_.finetuneBnAffine;
  st.precision = precision_;
  step_ = std::make_unique<TrainStep>(model_, st, comm_);
  ScheduleOptions so;
  so.kind = cfg_.lrSchedule;
  so.baseLr = scaledLr_;
  so.stepEpochs = cfg_.lrStep;
  so.gamma = cfg_.lrGamma;
  so.warmupEpochs = cfg_.warmupEpochs;
  so.totalEpochs = cfg_.epochs;
  schedule_ = std::make_unique<Schedule>(so);

  state_.seed = cfg_.seed;
  state_.scheduleKind = cfg_.lrSchedule;
  state_.configJson = cfg_.toJson().dump();
}

EvalOptions Trainer::evalOptions(int size) const {
  EvalOptions o;
  o.transform.kind = image::TransformKind::kVal;
  o.transform.inputSize = size;
  o.transform.resizeMode =
      cfg_.resizeMode == "shorter" ? image::ResizeMode::kShorter : image::ResizeMode::kFixres;
  o.batch = cfg_.batch;
  o.workers = cfg_.workers;
  o.skipBadImages = cfg_.skipBadImages;
  o.testFlip = cfg_.testFlip;
  o.seed = cfg_.seed;
  o.device = device_;
  o.precision = precision_;
  o.channelsLast = channelsLast_;
  o.normalizeOnDevice = normalizeOnDevice_;
  return o;
}

void Trainer::appendMetrics(const nlohmann::json& line) {
  if (comm_.rank() != 0) return;
  if (!metrics_.is_open()) metrics_.open(cfg_.runDir + "/metrics.jsonl", std::ios::app);
  metrics_ << line.dump() << "\n";
  metrics_.flush();
}

void Trainer::logProgress(int64_t it, int64_t n, double loss, double lr, double ips, double eta) {
  if (comm_.rank() != 0) return;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "epoch %lld/%d  iter %lld/%lld  loss %.4f  lr %.5g  %.1f img/s  ETA %.0fs",
                static_cast<long long>(state_.epoch + 1), cfg_.epochs, static_cast<long long>(it),
                static_cast<long long>(n), loss, lr, ips, eta);
  if (::isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "\r%s", buf);
    if (it == n) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  } else {
    log::info(buf);
  }
}

void Trainer::writeCheckpoints(bool epochEnd) {
  if (comm_.rank() != 0) return;
  state_.learningRate = schedule_->rate(static_cast<int>(state_.epoch));
  saveCheckpoint(cfg_.runDir + "/checkpoint.pth", state_, *model_, step_->optimizer());
  if (epochEnd) {
    saveCheckpoint(cfg_.runDir + "/checkpoint_" + std::to_string(state_.epoch - 1) + ".pth", state_,
                   *model_, step_->optimizer());
  }
}

int Trainer::agreedStopSignal() {
  // Every rank must stop at the same step (rank 0 saves, all meet at a barrier), so the ranks
  // agree: SIGTERM if any rank got it, else SIGINT if any got that.
  const int own = stopSignal();
  double term = own == SIGTERM, interrupt = own == SIGINT;
  if (comm_.worldSize() > 1) {
    auto sums = distributed::allReduceScalars(comm_, {term, interrupt});
    term = sums[0];
    interrupt = sums[1];
  }
  return term > 0 ? SIGTERM : interrupt > 0 ? SIGINT : 0;
}

RunSummary Trainer::run() {
  RunSummary summary;
  const auto start = Clock::now();
  if (comm_.rank() == 0) {
    makeDirectories(cfg_.runDir);
    writeFileAtomic(cfg_.runDir + "/config.json", cfg_.toJson().dump(2) + "\n");
  }
  comm_.barrier();
  if (auto resumed = resumeFromRunDir(cfg_.runDir, *model_, step_->optimizer())) {
    state_ = *resumed;
    state_.configJson = cfg_.toJson().dump();
    log::info("resumed from ", cfg_.runDir, " at epoch ", state_.epoch, ", iteration ",
              state_.iteration, " (step ", state_.globalStep, ")");
  } else if (cfg_.mode == RunMode::kFinetune && val_) {
    summary.before = evaluate(
        model_, val_, evalOptions(cfg_.evalSize > 0 ? cfg_.evalSize : cfg_.inputSize), comm_);
    log::info("before fine-tuning at ", summary.before.inputSize, ": top-1 ", summary.before.top1,
              "  top-5 ", summary.before.top5);
    appendMetrics({{"phase", "before"}, {"eval", summary.before.toJson()}});
  }

  image::TransformOptions tf;
  tf.kind = image::parseTransformKind(cfg_.trainTransform);
  tf.inputSize = cfg_.inputSize;
  tf.resizeMode =
      cfg_.resizeMode == "shorter" ? image::ResizeMode::kShorter : image::ResizeMode::kFixres;
  std::shared_ptr<data::Sampler> sampler =
      cfg_.sampler == "ra"
          ? data::makeRepeatedAugSampler(train_->size(), comm_.rank(), comm_.worldSize(), cfg_.seed,
                                         cfg_.repetitions, cfg_.lenFactor)
          : data::makeDistributedSampler(train_->size(), comm_.rank(), comm_.worldSize(), true,
                                         cfg_.seed, true);
  data::LoaderOptions lo;
  lo.batchSize = cfg_.batch;
  lo.threads = cfg_.workers;
  lo.dropLast = true;
  lo.seed = cfg_.seed;
  lo.badImages = cfg_.skipBadImages ? data::BadImagePolicy::kSkip : data::BadImagePolicy::kFail;
  lo.pinMemory = device_.is_cuda();
  lo.uint8Output = normalizeOnDevice_ && tf.kind != image::TransformKind::kValNoCrop;
  data::Loader loader(train_, sampler, tf, lo);

  const int accumulation = cfg_.accumulationSteps;
  int64_t cap = cfg_.iterationCap;
  if (cap < 0 && cfg_.mode == RunMode::kTrain)
    cap = std::max<int64_t>(
        1, 5005LL * 512 / (static_cast<int64_t>(cfg_.batch) * accumulation * comm_.worldSize()));
  const int64_t stepsAtStart = state_.globalStep;
  auto stopHere = [&](const std::string& why, int64_t iterations) {
    if (state_.iteration >= iterations) {
      state_.epoch++;
      state_.iteration = 0;
    }
    writeCheckpoints(false);
    comm_.barrier();
    summary.stoppedEarly = true;
    summary.steps = state_.globalStep - stepsAtStart;
    summary.seconds = secondsSince(start);
    log::info("stopped after step ", state_.globalStep, " (", why, "); checkpoint saved in ",
              cfg_.runDir, ", run the same command again to resume");
  };

  // state_.iteration counts optimizer steps; each consumes `accumulation` loader batches.
  while (state_.epoch < cfg_.epochs) {
    loader.startEpoch(state_.epoch, state_.iteration * accumulation);
    int64_t iterations = loader.batchesPerEpoch() / accumulation;
    if (cap > 0) iterations = std::min(iterations, cap);
    FIXRES_CHECK(iterations > 0, DataError, "the training set (", train_->size(),
                 " images) gives no full step of ", cfg_.batch, " x ", accumulation,
                 " images per process");
    step_->setTrainingMode();
    auto epochStart = Clock::now();
    int64_t seen = 0;
    double lossSum = 0;
    int64_t lossCount = 0;
    while (state_.iteration < iterations) {
      const double lr = schedule_->rate(static_cast<int>(state_.epoch),
                                        static_cast<double>(state_.iteration) / iterations);
      step_->begin();
      double loss = 0;
      int got = 0;
      for (; got < accumulation; ++got) {
        auto batch = loader.next();
        if (!batch) break;
        auto x = batch->images.to(device_, true);
        if (x.scalar_type() == torch::kUInt8) x = data::normalizeOnDevice(x, batch->lighting, tf);
        if (channelsLast_) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        auto y = batch->labels.to(device_, true);
        loss += step_->backward(x, y, 1.0 / accumulation) / accumulation;
        seen += y.size(0);
      }
      if (got < accumulation) break;  // the loader ran dry (skipped images)
      step_->finish(lr);
      state_.iteration++;
      state_.globalStep++;
      lossSum += loss;
      lossCount++;
      if (state_.iteration % cfg_.logEvery == 0 || state_.iteration == iterations) {
        double dt = secondsSince(epochStart);
        double ips = seen * comm_.worldSize() / std::max(dt, 1e-9);
        double eta = dt / std::max<int64_t>(1, lossCount) * (iterations - state_.iteration);
        logProgress(state_.iteration, iterations, lossSum / lossCount, lr, ips, eta);
        appendMetrics({{"step", state_.globalStep},
                       {"epoch", state_.epoch},
                       {"iteration", state_.iteration},
                       {"lr", lr},
                       {"loss", lossSum / lossCount},
                       {"images_per_s", ips}});
      }
      if (cfg_.stopAfterSteps > 0 && state_.globalStep >= cfg_.stopAfterSteps) {
        stopHere("--stop-after-steps", iterations);
        return summary;
      }
      if (int sig = agreedStopSignal()) {
        summary.stopSignal = sig;
        stopHere(sig == SIGINT ? "SIGINT" : "SIGTERM", iterations);
        return summary;
      }
    }
    state_.epoch++;
    state_.iteration = 0;
    const bool last = state_.epoch >= cfg_.epochs;
    if (val_ && (last || state_.epoch % cfg_.evalEvery == 0)) {
      summary.after = evaluate(
          model_, val_, evalOptions(cfg_.evalSize > 0 ? cfg_.evalSize : cfg_.inputSize), comm_);
      state_.accuracy = summary.after.top1;
      log::info("epoch ", state_.epoch, ": val top-1 ", summary.after.top1, "  top-5 ",
                summary.after.top5, "  loss ", summary.after.loss, " (", summary.after.count,
                " images)");
      appendMetrics({{"epoch", state_.epoch}, {"eval", summary.after.toJson()}});
    }
    writeCheckpoints(true);
    comm_.barrier();
    if (int sig = agreedStopSignal()) {
      summary.stopSignal = sig;
      summary.stoppedEarly = true;
      summary.steps = state_.globalStep - stepsAtStart;
      summary.seconds = secondsSince(start);
      log::info("stopped after epoch ", state_.epoch, " (", sig == SIGINT ? "SIGINT" : "SIGTERM",
                "); checkpoint saved in ", cfg_.runDir, ", run the same command again to resume");
      return summary;
    }
  }
  if (val_ && summary.after.count == 0) {
    summary.after = evaluate(
        model_, val_, evalOptions(cfg_.evalSize > 0 ? cfg_.evalSize : cfg_.inputSize), comm_);
  }
  summary.steps = state_.globalStep - stepsAtStart;
  summary.seconds = secondsSince(start);
  return summary;
}

}  // namespace fixres::engine
