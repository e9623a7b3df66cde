// Shared option groups of the run subcommands.
#include "fixres/cli/RunOptions.h"

#include <sstream>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/Sampler.h"
#include "fixres/engine/Schedule.h"
#include "fixres/image/Transform.h"

namespace fixres::cli {

void addModelOptions(CLI::App& app, engine::ModelSpec& m) {
  addShared(app, "--architecture", m.architecture);
  addShared(app, "--weight-path", m.weightPath);
  addShared(app, "--num-classes", m.numClasses);
  addSharedFlag(app, "--skip-classifier", m.skipClassifier);
}

void addNumericsOptions(CLI::App& app, engine::NumericsOptions& n, bool normalizeOn) {
  addSharedChoice(app, "--precision", n.precision, engine::numericsChoices().precision);
  addSharedChoice(app, "--memory-format", n.memoryFormat, engine::numericsChoices().memoryFormat);
  if (normalizeOn)
    addSharedChoice(app, "--normalize-on", n.normalizeOn, engine::numericsChoices().normalizeOn);
}

void addTrainingOptions(CLI::App& app, engine::RunConfig& c, std::string& imnetPath, bool& cpu) {
  addModelOptions(app, c.model);
  addShared(app, "--imnet-path", imnetPath)->required();
  addShared(app, "--input-size", c.inputSize);
  addShared(app, "--batch", c.batch);
  addShared(app, "--workers", c.workers);
  app.add_option("--accumulation-steps", c.accumulationSteps,
                 "Micro-batches of --batch whose gradients add up to one optimizer step")
      ->capture_default_str()
      ->group("Optimisation");
  addNumericsOptions(app, c.numerics, true);
  addChoice(app, "--transform", c.trainTransform, image::transformKinds(), "Train transform")
      ->group("Data");
  addSharedChoice(app, "--resize-mode", c.resizeMode, image::resizeModes());
  addChoice(app, "--sampler", c.sampler, data::samplerKinds(),
            "ra (repeated augmentation, FixRes) or distributed (torch DistributedSampler)")
      ->group("Data");
  app.add_option("--repetitions", c.repetitions, "Repeated augmentation: copies of each image")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--iteration-cap", c.iterationCap,
                 "Max iterations per epoch (-1: FixRes cap 5005*512/total batch for train)")
      ->capture_default_str()
      ->group("Data");
  addSharedFlag(app, "--skip-bad-images", c.skipBadImages);
  addSharedFlag(app, "--test-flip", c.testFlip);
  app.add_option("--epochs", c.epochs, "Epochs")->capture_default_str()->group("Optimisation");
  app.add_option("--learning-rate", c.learningRate,
                 "Base learning rate, scaled 8 x lr x batch x processes / 512 unless --absolute-lr")
      ->capture_default_str()
      ->group("Optimisation");
  addSharedFlag(app, "--absolute-lr", c.absoluteLr);
  app.add_option("--momentum", c.momentum, "SGD momentum")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--weight-decay", c.weightDecay, "SGD weight decay")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum")->group("Optimisation");
  addChoice(app, "--lr-schedule", c.lrSchedule, engine::scheduleKinds(),
            "Learning-rate schedule: step (StepLR), cosine or constant")
      ->group("Optimisation");
  app.add_option("--lr-step", c.lrStep, "StepLR period in epochs")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--lr-gamma", c.lrGamma, "StepLR factor")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--warmup-epochs", c.warmupEpochs, "Linear warm-up (epochs)")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--label-smoothing", c.labelSmoothing, "Label smoothing")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--eval-every", c.evalEvery, "Evaluate every K epochs (and after the last)")
      ->capture_default_str()
      ->group("Optimisation");
  addShared(app, "--seed", c.seed);
  app.add_option("--stop-after-steps", c.stopAfterSteps,
                 "Stop (with a checkpoint) after this many steps in total; rerun to resume")
      ->group("Optimisation");
  app.add_option("--log-every", c.logEvery, "Progress line every N iterations")
      ->capture_default_str()
      ->group("Output");
  addSharedFlag(app, "--cpu", cpu);
}

void addEvalFlags(CLI::App& app, EvalFlags& f) {
  addSharedChoice(app, "--resize-mode", f.settings.resizeMode, image::resizeModes());
  addShared(app, "--batch", f.settings.batch);
  addShared(app, "--workers", f.settings.workers);
  addSharedFlag(app, "--test-flip", f.settings.testFlip);
  addNumericsOptions(app, f.numerics, true);
  addSharedFlag(app, "--cpu", f.cpu);
}

Rank connectRank(const ClusterOptions& cluster, bool cpuOnly,
                 const engine::NumericsOptions& numerics) {
  Rank r;
  r.world = resolveWorld(cluster);
  distributed::ConnectOptions co;
  co.backend = cluster.backend;
  co.cuda = !cpuOnly && torch::cuda::is_available();
  co.networkInterface = cluster.networkInterface;
  r.comm = distributed::connect(r.world, co);
  if (r.world.distributed())
    log::info("world: ", r.world.worldSize, " processes (", r.world.source, "), backend ",
              r.comm->backendName());
  r.run = engine::makeRunDevice(r.world.localRank, cpuOnly, numerics);
  return r;
}

std::vector<int> parseSizes(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      int v = std::stoi(item, &used);
      FIXRES_CHECK(used == item.size() && v >= 8 && v <= 4096, UsageError, flag,
                   " values must be integers in [8, 4096], got '", item, "'");
      out.push_back(v);
    } catch (const std::logic_error&) {
      FIXRES_FAIL(UsageError, flag, " must be a comma-separated list of sizes, got '", text, "'");
    }
  }
  FIXRES_CHECK(!out.empty(), UsageError, flag, " is empty");
  return out;
}

}  // namespace fixres::cli
