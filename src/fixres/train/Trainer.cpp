// Training and FixRes fine-tuning loop, in named steps: resume (or evaluate first), start the run
// folder, then per epoch start, train, finish; every early stop goes through stopRun, every error
// after training began through saveBeforeExit (those, resuming and checkpoints:
// TrainerLifecycle.cpp).
#include "fixres/train/Trainer.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <csignal>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/DatasetReader.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/runtime/ModelInput.h"
#include "fixres/train/TrainingSampler.h"

namespace fixres::engine {
namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// --nan-policy skip gives up after this many skipped steps in a row: the weights themselves are
// then the problem, not a batch.
constexpr int64_t kMaxSkippedInARow = 10;

}  // namespace

Trainer::Trainer(RunConfig cfg, distributed::Communicator& comm, RunDevice run)
    : cfg_(std::move(cfg)), comm_(comm), run_(run) {
  // Training and its evaluations run LibTorch, whatever runtime the caller's inference uses (a
  // sweep's fine-tuning runs in --runtime openvino).
  run_.numerics.runtime = Runtime::kLibTorch;
  cfg_.validate();
  const data::DatasetReader& reader = data::readerFor(cfg_.trainPath, cfg_.fileIndex);
  train_ = reader.open(cfg_.trainPath, cfg_.fileIndex);
  // Before config.json and the checkpoint's config are made: they record the sampler used, and a
  // resumed run sets it the same way before comparing.
  cfg_.sampler = trainingSampler(reader, cfg_.sampler, cfg_.trainPath);
  if (!cfg_.valPath.empty()) {
    val_ = data::openDataset(cfg_.valPath, cfg_.fileIndex);
    data::checkSameClasses(*train_, *val_);
  }
  const auto classes = static_cast<int64_t>(train_->classes().size());
  FIXRES_CHECK(cfg_.model.numClasses == 0 || cfg_.model.numClasses >= classes, UsageError,
               "--num-classes ", cfg_.model.numClasses, " is fewer than the ", classes,
               " classes of ", cfg_.trainPath);
  // Same initial weights on every rank (and broadcast by the step anyway).
  // A transformer's position embedding is laid out for the training size; evaluations at another
  // size, or progressive resizing, resample it per input.
  const Preprocessing input = cfg_.preprocessing();
  const ResolvedModel resolved = resolvedFor(cfg_.model, input);
  evalOptions_ = evalOptions(cfg_.evalSettings(), cfg_.evaluationSize(), input, run_, cfg_.seed);
  auto built = buildModel(resolved, classes, run_, cfg_.seed);
  model_ = built.model;
  const int64_t outputs = cfg_.model.numClasses > 0 ? cfg_.model.numClasses : classes;
  // The training-loop parts (RunPart.h), made here: a part's model (the EMA's) is built right
  // after the run's, with the same seed, so torch's generator ends where the run's build left it.
  RunServices services{
      comm_,
      [this, resolved, classes] { return buildModel(resolved, classes, run_, cfg_.seed).model; },
      [this](models::Model& m) { return evaluate(m, val_, evalOptions_, comm_); }};
  parts_ = makeRunParts(cfg_, services);
  if (cfg_.mix.enabled()) {
    MixOptions mo = cfg_.mix;
    mo.numClasses = outputs;
    mix_ = std::make_unique<BatchMix>(mo);
  }
  if (!cfg_.model.weightPath.empty())
    log::info("loaded ", built.weights.loaded, " tensors from ", cfg_.model.weightPath,
              built.weights.skipped.empty() ? "" : " (classifier re-initialised)");
  trainTransform_ = input.transform(cfg_.trainTransform, cfg_.inputSize);
  trainTransform_.autoAugment = cfg_.autoAugment;
  trainTransform_.raMagnitude = cfg_.raMagnitude;
  trainTransform_.augmixSeverity = cfg_.augmixSeverity;
  trainTransform_.randomErase = cfg_.randomErase;

  // The reference's linear scaling counts the images of one optimizer step.
  scaledLr_ = cfg_.absoluteLr
                  ? cfg_.learningRate
                  : fixresScaledLr(cfg_.learningRate, cfg_.batch * cfg_.accumulationSteps,
                                   comm_.worldSize());
  FIXRES_CHECK(std::isfinite(scaledLr_), UsageError, "--learning-rate ", cfg_.learningRate,
               " scaled by 8 x batch x processes / 512 is not a finite number");
  StepOptions st = cfg_.step;
  st.learningRate = scaledLr_;
  if (run_.numerics.precision == Precision::kFp16) st.lossScaling = LossScalerOptions{};
  st.finetune = cfg_.mode == RunMode::kFinetune;
  st.precision = run_.numerics.precision;
  st.maxSkippedInARow = cfg_.nanPolicy == NanPolicy::kSkip ? kMaxSkippedInARow : 0;
  st.accumulationSteps = cfg_.accumulationSteps;
  step_ = std::make_unique<TrainStep>(model_, st, comm_);
  ScheduleOptions so = cfg_.schedule;
  so.baseLr = scaledLr_;
  so.totalEpochs = cfg_.epochs;
  schedule_ = std::make_unique<Schedule>(so);

  state_.seed = cfg_.seed;
  state_.scheduleKind = choiceName(scheduleKinds(), cfg_.schedule.kind);
  state_.configJson = jsonText(cfg_.toJson());
}

RunSummary Trainer::run() {
  summary_ = RunSummary{};
  summary_.split = splitName();
  start_ = Clock::now();
  const bool resumed = resume();
  for (auto& part : parts_) part->start(moment(), resumed, val_ != nullptr);
  startRunFolder(resumed);
  if (!resumed && cfg_.mode == RunMode::kFinetune && val_) evaluateBeforeTraining();
  stepsAtStart_ = state_.globalStep;
  data::Loader loader = makeTrainLoader();
  std::optional<Stop> stop;
  try {
    stop = train(loader);
  } catch (...) {
    saveBeforeExit();
    throw;
  }
  if (stop) return stopRun(*stop);
  if (val_ && summary_.after.count == 0) evaluateAfter();
  return summarize();
}

std::optional<Trainer::Stop> Trainer::train(data::Loader& loader) {
  while (state_.epoch < cfg_.epochs) {
    // (An epoch whose steps are all done but not its end -- a stop on its last step -- is
    // finished first.)
    if (state_.iteration == 0)
      if (auto stop = stepLimit()) return stop;
    const int64_t iterations = startEpoch(loader);
    if (auto stop = trainEpoch(loader, iterations)) return stop;
    finishEpoch();
    if (auto stop = agreedStop()) return stop;
  }
  return std::nullopt;
}

void Trainer::evaluateBeforeTraining() {
  summary_.before = evaluateNow();
  log::info("before fine-tuning at ", summary_.before.inputSize, ": ", splitName(), " top-1 ",
            summary_.before.top1, "  top-5 ", summary_.before.top5);
  nlohmann::json eval = summary_.before.toJson();
  eval["split"] = splitName();
  appendMetrics({{"phase", "before"}, {"step", state_.globalStep}, {"eval", eval}});
}

std::string Trainer::splitName() const {
  const std::filesystem::path p = std::filesystem::path(cfg_.valPath).lexically_normal();
  const std::string name = (p.has_filename() ? p : p.parent_path()).filename().string();
  return name.empty() ? cfg_.valPath : name;
}

data::Loader Trainer::makeTrainLoader() {
  auto sampler = makeTrainingSampler(cfg_.sampler, *train_, comm_.rank(), comm_.worldSize(),
                                     cfg_.seed, cfg_.repetitions);
  auto lo = loaderOptions(run_, trainTransform_, cfg_.batch, cfg_.workers, cfg_.seed,
                          cfg_.skipBadImages, /*dropLast=*/true);
  return data::Loader(train_, sampler, trainTransform_, lo);
}

int64_t Trainer::startEpoch(data::Loader& loader) {
  // state_.iteration counts optimizer steps; each consumes `accumulation` loader batches.
  const int accumulation = cfg_.accumulationSteps;
  if (cfg_.progressive.enabled()) {
    const int res = progressiveResolution(cfg_.progressive, static_cast<int>(state_.epoch),
                                          cfg_.model.info().outputStride);
    if (res != trainTransform_.inputSize) {
      trainTransform_.inputSize = res;
      loader.setTransform(trainTransform_);
      log::info("epoch ", state_.epoch + 1, ": training at ", res, " px (progressive resizing)");
    }
  }
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
  step_->takeTop1Hits();  // the epoch's training top-1 counts from here
  return iterations;
}

Trainer::StepOutcome Trainer::trainStep(DevicePrefetcher& batches, double lr, StepTally& tally) {
  const int accumulation = cfg_.accumulationSteps;
  for (int got = 0; got < accumulation; ++got) {
    const auto waitStart = Clock::now();
    auto batch = batches.next();
    tally.dataWaitSeconds += secondsSince(waitStart);
    if (!batch) {  // the loader ran dry (skipped images)
      step_->rollBack();
      return StepOutcome::kNoData;
    }
    auto [x, y] = batch->model;
    tally.images += y.size(0);
    if (mix_) {
      // Drawn from (seed, epoch, step, micro-batch, rank): the same on resume.
      auto rng = mixRng(cfg_.seed, state_.epoch, state_.iteration, got, comm_.rank());
      auto mixed = mix_->mix(x, y, rng);
      x = mixed.images;
      y = mixed.targets;  // soft targets: float N x classes
    }
    // The loss and the not-finite check stay on the device (StepTally) until readSteps(); a step
    // skipped on the host is known now. One micro-batch: a captured graph's replay, if any.
    if (accumulation == 1)
      return step_->stepAsync(x, y, lr) == StepResult::kNotFinite ? StepOutcome::kSkippedOnHost
                                                                  : StepOutcome::kDone;
    if (got == 0) step_->begin(accumulation);
    step_->backward(x, y, 1.0 / accumulation);
  }
  return step_->finish(lr) == StepResult::kNotFinite ? StepOutcome::kSkippedOnHost
                                                     : StepOutcome::kDone;
}

std::optional<Trainer::Stop> Trainer::trainEpoch(data::Loader& loader, int64_t iterations) {
  const auto epochStart = Clock::now();
  auto windowStart = epochStart;  // of the steps since the last progress line
  StepTally epochTally, windowTally;
  epoch_ = EpochCounts{};
  int64_t done = 0;
  DevicePrefetcher batches(loader, run_, trainTransform_);
  // A stop (or the end of the loop) reads the steps first: a step read then may halt the run.
  auto after = [this](std::optional<Stop> stop) {
    if (auto halted = readSteps()) return halted;
    return stop;
  };
  while (state_.iteration < iterations) {
    if (auto stop = stepLimit()) return after(stop);
    const double lr = schedule_->rate(static_cast<int>(state_.epoch),
                                      static_cast<double>(state_.iteration) / iterations);
    const auto stepStart = Clock::now();
    const StepOutcome outcome = trainStep(batches, lr, windowTally);
    noteProgress(secondsSince(stepStart));  // bounds a stop's wait (StopSignal.h)
    if (outcome == StepOutcome::kNoData) break;
    // No throwing call between the step's update and these counts: a checkpoint is only ever
    // taken with the weights and the counts of the same step (a halted step's read takes them
    // back).
    state_.iteration++;
    state_.globalStep++;
    unsaved_ = true;
    ++done;
    const bool logNow = state_.iteration % cfg_.logEvery == 0 || state_.iteration == iterations;
    const bool partsAct = std::any_of(parts_.begin(), parts_.end(),
                                      [this](const auto& p) { return p->actsAfterStep(moment()); });
    const bool checkpointNow = cfg_.checkpointEverySteps > 0 &&
                               state_.globalStep % cfg_.checkpointEverySteps == 0 &&
                               state_.iteration < iterations;
    if (logNow || partsAct || checkpointNow || outcome == StepOutcome::kSkippedOnHost)
      if (auto stop = readSteps()) return stop;
    if (partsAct)
      for (auto& part : parts_)
        if (part->actsAfterStep(moment())) part->stepEnd(moment(), model_, epoch_.lastApplied);
    if (logNow) {
      epochTally.images += windowTally.images;
      reportProgress(iterations, lr, secondsSince(epochStart), done, epochTally, windowTally,
                     secondsSince(windowStart));
      windowStart = Clock::now();
      windowTally = StepTally{};
    }
    // Mid-epoch checkpoints: the state of this completed step, resumed exactly as a stop's.
    // An epoch's last step is saved by finishEpoch.
    if (checkpointNow) writeCheckpoints(false);
    if (auto stop = agreedStop()) return after(stop);
  }
  return after(std::nullopt);
}

// The epoch's steps are done (state_.iteration may equal its step count in a checkpoint taken
// here: a resumed run then starts with this).
void Trainer::finishEpoch() {
  const int64_t epoch = state_.epoch + 1;  // epochs done with this one
  if (!step_->stateFinite())
    throw Error(
        ExitCode::kOther,
        detail::concat("epoch ", epoch, ": the weights are not finite after step ",
                       state_.globalStep, " (an update overflowed: lower --learning-rate)"));
  nlohmann::json record = {{"epoch", epoch}, {"step", state_.globalStep}};
  // The running top-1 of the epoch's training batches over every rank (since the resume, for an
  // epoch resumed midway): augmented images, the weights of each step.
  const auto hits = step_->takeTop1Hits();
  const auto sums = distributed::allReduceScalars(
      comm_, {static_cast<double>(hits.correct), static_cast<double>(hits.count)});
  if (sums[1] > 0)
    record["train"] = {{"top1", 100.0 * sums[0] / sums[1]},
                       {"count", static_cast<int64_t>(sums[1])}};
  const bool evaluated = val_ && (epoch >= cfg_.epochs || epoch % cfg_.evalEvery == 0);
  if (evaluated) {
    std::string line = detail::concat("epoch ", epoch, ": ");
    evaluateAfter(&record, &line);
    state_.accuracy = summary_.after.top1;
    log::info(line);
  }
  for (auto& part : parts_) part->epochEnd(moment(), evaluated ? &summary_.after : nullptr, record);
  if (record.contains("train") || record.contains("eval")) appendMetrics(record);
  state_.epoch = epoch;
  state_.iteration = 0;
  unsaved_ = true;
  writeCheckpoints(true);
  comm_.barrier();
}

RunSummary Trainer::summarize() {
  summary_.steps = state_.globalStep - stepsAtStart_;
  summary_.seconds = secondsSince(start_);
  return summary_;
}

EvalResult Trainer::evaluateNow() {
  return evaluate(model_, val_, evalOptions_, comm_);
}

void Trainer::evaluateAfter(nlohmann::json* record, std::string* line) {
  summary_.after = evaluateNow();
  const auto& r = summary_.after;
  if (line)
    *line += detail::concat(splitName(), " top-1 ", r.top1, "  top-5 ", r.top5, "  loss ", r.loss,
                            " (", r.count, " images)");
  if (record) {
    (*record)["eval"] = r.toJson();
    (*record)["eval"]["split"] = splitName();
  }
  Evaluation e{r, record, line, summary_};
  for (auto& part : parts_) part->evaluated(moment(), e);
}

CheckpointExtras Trainer::partStates() {
  CheckpointExtras out;
  for (auto& part : parts_)
    if (auto s = part->checkpointState()) out.push_back(std::move(*s));
  return out;
}

OptimizerRef Trainer::optimizerRef() {
  return OptimizerRef{step_->optimizer(), step_->optimizerKind(), step_->lossScaler()};
}

}  // namespace fixres::engine
