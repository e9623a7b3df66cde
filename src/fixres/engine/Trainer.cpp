// Training and FixRes fine-tuning loop, in named steps: prepare the run folder, resume or
// evaluate first, then per epoch start, train, finish; every early stop goes through stopRun.
#include "fixres/engine/Trainer.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Sampler.h"
#include "fixres/engine/ModelInput.h"

namespace fixres::engine {
namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

Trainer::Trainer(RunConfig cfg, distributed::Communicator& comm, RunDevice run)
    : cfg_(std::move(cfg)), comm_(comm), run_(run) {
  cfg_.validate();
  train_ = data::openImageFolder(cfg_.trainPath);
  if (!cfg_.valPath.empty()) {
    val_ = data::openImageFolder(cfg_.valPath);
    data::checkSameClasses(*train_, *val_);
  }
  // Same initial weights on every rank (and broadcast by the step anyway).
  auto built =
      buildModel(cfg_.model, static_cast<int64_t>(train_->classes().size()), run_, cfg_.seed);
  model_ = built.model;
  if (!cfg_.model.weightPath.empty())
    log::info("loaded ", built.weights.loaded, " tensors from ", cfg_.model.weightPath,
              built.weights.skipped.empty() ? "" : " (classifier re-initialised)");
  trainTransform_ = transformOptions(cfg_.trainTransform, cfg_.inputSize, cfg_.resizeMode,
                                     cfg_.model.preprocessing);

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
  st.precision = run_.numerics.precision;
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
  state_.scheduleKind = choiceName(scheduleKinds(), cfg_.lrSchedule);
  state_.configJson = cfg_.toJson().dump();
}

RunSummary Trainer::run() {
  summary_ = RunSummary{};
  start_ = Clock::now();
  prepareRunFolder();
  if (!resume() && cfg_.mode == RunMode::kFinetune && val_) evaluateBeforeTraining();
  stepsAtStart_ = state_.globalStep;
  data::Loader loader = makeTrainLoader();
  while (state_.epoch < cfg_.epochs) {
    const int64_t iterations = startEpoch(loader);
    if (auto stop = trainEpoch(loader, iterations)) return stopRun(*stop, iterations);
    finishEpoch();
    if (auto stop = agreedStop()) {
      stop->checkpointed = true;
      return stopRun(*stop, 0);
    }
  }
  if (val_ && summary_.after.count == 0) summary_.after = evaluateNow();
  return summarize();
}

void Trainer::prepareRunFolder() {
  if (comm_.rank() == 0) {
    makeDirectories(cfg_.runDir);
    writeFileAtomic(cfg_.runDir + "/config.json", cfg_.toJson().dump(2) + "\n");
  }
  comm_.barrier();
}

bool Trainer::resume() {
  auto resumed = resumeFromRunDir(cfg_.runDir, *model_, step_->optimizer());
  if (!resumed) return false;
  // The configuration the checkpoint was written with must still read (today's and earlier
  // versions' form); what differs from the new flags is listed for the curious.
  if (!resumed->configJson.empty()) {
    const auto stored = RunConfig::fromJson(nlohmann::json::parse(resumed->configJson)).toJson();
    const auto now = cfg_.toJson();
    for (const auto& [key, value] : now.items())
      if (stored.contains(key) && stored[key] != value)
        log::debug("resume: ", key, " was ", stored.at(key).dump(), ", now ", value.dump());
  }
  state_ = *resumed;
  state_.configJson = cfg_.toJson().dump();
  log::info("resumed from ", cfg_.runDir, " at epoch ", state_.epoch, ", iteration ",
            state_.iteration, " (step ", state_.globalStep, ")");
  return true;
}

void Trainer::evaluateBeforeTraining() {
  summary_.before = evaluateNow();
  log::info("before fine-tuning at ", summary_.before.inputSize, ": top-1 ", summary_.before.top1,
            "  top-5 ", summary_.before.top5);
  appendMetrics({{"phase", "before"}, {"eval", summary_.before.toJson()}});
}

data::Loader Trainer::makeTrainLoader() {
  std::shared_ptr<data::Sampler> sampler =
      cfg_.sampler == data::SamplerKind::kRepeatedAug
          ? data::makeRepeatedAugSampler(train_->size(), comm_.rank(), comm_.worldSize(), cfg_.seed,
                                         cfg_.repetitions, kRepeatedAugLenFactor)
          : data::makeDistributedSampler(train_->size(), comm_.rank(), comm_.worldSize(), true,
                                         cfg_.seed, true);
  auto lo = loaderOptions(run_, trainTransform_, cfg_.batch, cfg_.workers, cfg_.seed,
                          cfg_.skipBadImages, /*dropLast=*/true);
  return data::Loader(train_, sampler, trainTransform_, lo);
}

int64_t Trainer::startEpoch(data::Loader& loader) {
  // state_.iteration counts optimizer steps; each consumes `accumulation` loader batches.
  const int accumulation = cfg_.accumulationSteps;
  loader.startEpoch(state_.epoch, state_.iteration * accumulation);
  int64_t cap = cfg_.iterationCap;
  if (cap < 0 && cfg_.mode == RunMode::kTrain)
    cap = std::max<int64_t>(
        1, 5005LL * 512 / (static_cast<int64_t>(cfg_.batch) * accumulation * comm_.worldSize()));
  int64_t iterations = loader.batchesPerEpoch() / accumulation;
  if (cap > 0) iterations = std::min(iterations, cap);
  FIXRES_CHECK(iterations > 0, DataError, "the training set (", train_->size(),
               " images) gives no full step of ", cfg_.batch, " x ", accumulation,
               " images per process");
  step_->setTrainingMode();
  return iterations;
}

bool Trainer::trainStep(data::Loader& loader, double lr, double& loss, int64_t& images) {
  const int accumulation = cfg_.accumulationSteps;
  step_->begin();
  loss = 0;
  for (int got = 0; got < accumulation; ++got) {
    auto batch = loader.next();
    if (!batch) return false;  // the loader ran dry (skipped images)
    auto [x, y] = toModel(*batch, run_, trainTransform_);
    loss += step_->backward(x, y, 1.0 / accumulation) / accumulation;
    images += y.size(0);
  }
  step_->finish(lr);
  return true;
}

std::optional<Trainer::Stop> Trainer::trainEpoch(data::Loader& loader, int64_t iterations) {
  const auto epochStart = Clock::now();
  int64_t seen = 0, lossCount = 0;
  double lossSum = 0;
  while (state_.iteration < iterations) {
    const double lr = schedule_->rate(static_cast<int>(state_.epoch),
                                      static_cast<double>(state_.iteration) / iterations);
    double loss = 0;
    if (!trainStep(loader, lr, loss, seen)) break;
    state_.iteration++;
    state_.globalStep++;
    lossSum += loss;
    lossCount++;
    if (state_.iteration % cfg_.logEvery == 0 || state_.iteration == iterations) {
      const double dt = secondsSince(epochStart);
      const double ips = seen * comm_.worldSize() / std::max(dt, 1e-9);
      const double eta = dt / std::max<int64_t>(1, lossCount) * (iterations - state_.iteration);
      logProgress(state_.iteration, iterations, lossSum / lossCount, lr, ips, eta);
      appendMetrics({{"step", state_.globalStep},
                     {"epoch", state_.epoch},
                     {"iteration", state_.iteration},
                     {"lr", lr},
                     {"loss", lossSum / lossCount},
                     {"images_per_s", ips}});
    }
    if (cfg_.stopAfterSteps > 0 && state_.globalStep >= cfg_.stopAfterSteps)
      return Stop{"--stop-after-steps"};
    if (auto stop = agreedStop()) return stop;
  }
  return std::nullopt;
}

void Trainer::finishEpoch() {
  state_.epoch++;
  state_.iteration = 0;
  const bool last = state_.epoch >= cfg_.epochs;
  if (val_ && (last || state_.epoch % cfg_.evalEvery == 0)) {
    summary_.after = evaluateNow();
    state_.accuracy = summary_.after.top1;
    log::info("epoch ", state_.epoch, ": val top-1 ", summary_.after.top1, "  top-5 ",
              summary_.after.top5, "  loss ", summary_.after.loss, " (", summary_.after.count,
              " images)");
    appendMetrics({{"epoch", state_.epoch}, {"eval", summary_.after.toJson()}});
  }
  writeCheckpoints(true);
  comm_.barrier();
}

RunSummary Trainer::stopRun(const Stop& stop, int64_t iterations) {
  if (!stop.checkpointed) {
    if (state_.iteration >= iterations) {
      state_.epoch++;
      state_.iteration = 0;
    }
    writeCheckpoints(false);
    comm_.barrier();
  }
  summary_.stoppedEarly = true;
  summary_.stopSignal = stop.signal;
  log::info("stopped after step ", state_.globalStep, " (", stop.why,
            stop.checkpointed ? ", at the end of epoch " + std::to_string(state_.epoch) : "",
            "); checkpoint saved in ", cfg_.runDir, ", run the same command again to resume");
  return summarize();
}

RunSummary Trainer::summarize() {
  summary_.steps = state_.globalStep - stepsAtStart_;
  summary_.seconds = secondsSince(start_);
  return summary_;
}

EvalResult Trainer::evaluateNow() {
  return evaluate(model_, val_,
                  evalOptions(cfg_.evalSettings(), cfg_.evaluationSize(), cfg_.model.preprocessing,
                              run_, cfg_.seed),
                  comm_);
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

std::optional<Trainer::Stop> Trainer::agreedStop() {
  // Every rank must stop at the same step (rank 0 saves, all meet at a barrier), so the ranks
  // agree: SIGTERM if any rank got it, else SIGINT if any got that.
  const int own = stopSignal();
  double term = own == SIGTERM, interrupt = own == SIGINT;
  if (comm_.worldSize() > 1) {
    auto sums = distributed::allReduceScalars(comm_, {term, interrupt});
    term = sums[0];
    interrupt = sums[1];
  }
  if (term > 0) return Stop{"SIGTERM", SIGTERM};
  if (interrupt > 0) return Stop{"SIGINT", SIGINT};
  return std::nullopt;
}

}  // namespace fixres::engine
