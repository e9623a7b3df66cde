// Shared option groups of the run subcommands.
#include "fixres/cli/RunOptions.h"

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/Sampler.h"
#include "fixres/engine/Optimizer.h"
#include "fixres/engine/Schedule.h"
#include "fixres/image/Transform.h"
#include "fixres/models/Catalogue.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {

std::string defaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/fixres";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/fixres";
  return "";  // fetchToCache asks for --cache-dir
}

void addIndexCacheFlag(CLI::App& app, data::FileIndexOptions& index) {
  index.enabled = true;
  const std::string cache = defaultCacheDir();
  index.cacheDir = cache.empty() ? "" : cache + "/index";
  const FlagSpec& f = sharedFlag("--no-index-cache");
  app.add_flag_callback(
         f.names, [&index]() { index.enabled = false; }, f.help)
      ->group(f.group);
}

void addDownloadOptions(CLI::App& app, DownloadOptions& d) {
  // The default is resolved here, not shown in --help: it is this machine's home folder.
  addShared(app, "--cache-dir", d.cacheDir);
  d.cacheDir = defaultCacheDir();
  addShared(app, "--download-timeout", d.stallTimeoutS);
  d.progressBar = ::isatty(STDERR_FILENO) == 1;
}

namespace {

// The registry's name for `name`, or `name` itself when the registry does not know it.
std::string canonicalArchitecture(const std::string& name) {
  try {
    return models::architectureInfo(name).name;
  } catch (const UsageError&) {
    return name;
  }
}

}  // namespace

void addModelOptions(CLI::App& app, engine::ModelSpec& m) {
  auto* architecture = addShared(app, "--architecture", m.architecture);
  auto* weightPath = addShared(app, "--weight-path", m.weightPath);
  addShared(app, "--num-classes", m.numClasses);
  addSharedFlag(app, "--skip-classifier", m.skipClassifier);
  auto* efficientNet = addShared(app, "--EfficientNet-models", m.efficientNetModel);
  auto* interpolation =
      addSharedChoice(app, "--interpolation", m.interpolation, image::interpolations());
  auto* mean = addShared(app, "--mean", m.mean)->expected(3);
  auto* std = addShared(app, "--std", m.std)->expected(3);
  addShared(app, "--drop-rate", m.dropRate);
  addShared(app, "--drop-path-rate", m.dropPathRate);
  addDownloadOptions(app, m.download);
  // Declared after the options it completes: CLI11 runs the callbacks in declaration order, so
  // the explicit values (command line or --config) are in `m` when this one runs.
  const FlagSpec& f = sharedFlag("--pretrained");
  app.add_option_function<std::string>(
         f.names,
         [&m, architecture, efficientNet, interpolation, mean, std](const std::string& name) {
           const models::PublishedWeights* w = nullptr;
           try {
             w = &models::publishedWeights(name);
             models::architectureInfo(w->architecture);
           } catch (const UsageError& e) {
             if (w == nullptr) throw CLI::ValidationError(e.what());
             throw CLI::ValidationError("--pretrained",
                                        name + " is a " + w->architecture +
                                            ", an architecture fixres does not build yet ('fixres "
                                            "weights fetch " +
                                            name + "' downloads the file)");
           }
           if (architecture->count() > 0 || efficientNet->count() > 0) {
             const std::string given =
                 m.architecture == "EfficientNet" ? m.efficientNetModel : m.architecture;
             if (canonicalArchitecture(given) != canonicalArchitecture(w->architecture))
               throw CLI::ValidationError(
                   "--pretrained", name + " is a " + w->architecture + ", not --architecture " +
                                       given + " (leave --architecture out, or name the same one)");
           } else {
             m.architecture = w->architecture;
           }
           m.weightPath = remoteFileSpec({w->url, w->sha256});
           if (interpolation->count() == 0)
             m.interpolation = w->bicubic ? image::Filter::kBicubic : image::Filter::kBilinear;
           if (w->halfNormalization && mean->count() == 0) m.mean = {0.5f, 0.5f, 0.5f};
           if (w->halfNormalization && std->count() == 0) m.std = {0.5f, 0.5f, 0.5f};
         },
         f.help)
      ->group(f.group)
      ->excludes(weightPath);
}

void addNumericsOptions(CLI::App& app, engine::NumericsOptions& n, bool normalizeOn) {
  addSharedChoice(app, "--precision", n.precision, engine::numericsChoices().precision);
  addSharedChoice(app, "--memory-format", n.memoryFormat, engine::numericsChoices().memoryFormat);
  if (normalizeOn)
    addSharedChoice(app, "--normalize-on", n.normalizeOn, engine::numericsChoices().normalizeOn);
}

namespace {
// An option of train/finetune only, its default shown in --help.
template <typename T>
CLI::Option* addRunOption(CLI::App& app, const std::string& name, T& target,
                          const std::string& help, const std::string& group) {
  return app.add_option(name, target, help)->capture_default_str()->group(group);
}
}  // namespace

void addTrainingOptions(CLI::App& app, engine::RunConfig& c, std::string& imnetPath, bool& cpu) {
  addModelOptions(app, c.model);
  addShared(app, "--imnet-path", imnetPath)->required();
  addShared(app, "--input-size", c.inputSize);
  addShared(app, "--batch", c.batch);
  addShared(app, "--workers", c.workers);
  addRunOption(app, "--accumulation-steps", c.accumulationSteps,
               "Micro-batches of --batch whose gradients add up to one optimizer step",
               "Optimisation");
  addNumericsOptions(app, c.numerics, true);
  addChoice(app, "--transform", c.trainTransform, image::transformKinds(), "Train transform")
      ->group("Data");
  addSharedChoice(app, "--resize-mode", c.resizeMode, image::resizeModes());
  addSharedChoice(app, "--auto-augment", c.autoAugment, image::autoAugmentKinds());
  addShared(app, "--ra-magnitude", c.raMagnitude);
  addShared(app, "--augmix-severity", c.augmixSeverity);
  addShared(app, "--random-erase", c.randomErase);
  addChoice(app, "--sampler", c.sampler, data::samplerKinds(),
            "ra (repeated augmentation, FixRes) or distributed (torch DistributedSampler)")
      ->group("Data");
  addRunOption(app, "--repetitions", c.repetitions,
               "Repeated augmentation: copies of each image (1 to 100)", "Data");
  addRunOption(app, "--iteration-cap", c.iterationCap,
               "Max iterations per epoch, >= 1 (-1: FixRes cap 5005*512/total batch for train, "
               "none for finetune)",
               "Data");
  addSharedFlag(app, "--skip-bad-images", c.skipBadImages);
  addIndexCacheFlag(app, c.fileIndex);
  addSharedFlag(app, "--test-flip", c.testFlip);
  addRunOption(app, "--epochs", c.epochs, "Epochs", "Optimisation");
  addRunOption(app, "--learning-rate", c.learningRate,
               "Base learning rate (finite, > 0), scaled 8 x lr x batch x processes / 512 unless "
               "--absolute-lr",
               "Optimisation");
  addSharedFlag(app, "--absolute-lr", c.absoluteLr);
  addChoice(app, "--opt", c.opt, engine::optimizerKinds(),
            "Optimizer (the torchvision references'): sgd, adamw (default betas and eps) or "
            "rmsprop (eps 0.0316, alpha 0.9)")
      ->group("Optimisation");
  addRunOption(app, "--momentum", c.momentum, "Momentum of sgd and rmsprop, in [0, 1)",
               "Optimisation");
  addRunOption(app, "--weight-decay", c.weightDecay, "Weight decay, >= 0", "Optimisation");
  // Unset: the parameters keep --weight-decay (the references' default None).
  auto decayOf = [&app](const std::string& name, std::optional<double>& target,
                        const std::string& help) {
    app.add_option_function<double>(
           name, [&target](double v) { target = v; }, help)
        ->group("Optimisation");
  };
  decayOf("--norm-weight-decay", c.normWeightDecay,
          "Weight decay of the norm layers' parameters (BatchNorm, GroupNorm, LayerNorm, ...), "
          ">= 0 (default: --weight-decay)");
  decayOf("--bias-weight-decay", c.biasWeightDecay,
          "Weight decay of every parameter named bias (norm layers' too), >= 0 (default: that "
          "of its layer)");
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum (--opt sgd)")->group("Optimisation");
  addRunOption(app, "--clip-grad-norm", c.clipGradNorm,
               "Clip the gradients' total 2-norm to this (after the all-reduce and loss "
               "unscaling), >= 0 (0: no clipping)",
               "Optimisation");
  addChoice(app, "--lr-schedule", c.lrSchedule, engine::scheduleKinds(),
            "Learning-rate schedule: step (StepLR), cosine or constant")
      ->group("Optimisation");
  addRunOption(app, "--lr-step", c.lrStep, "StepLR period in epochs", "Optimisation");
  addRunOption(app, "--lr-gamma", c.lrGamma, "StepLR factor, > 0", "Optimisation");
  addRunOption(app, "--warmup-epochs", c.warmupEpochs, "Linear warm-up (epochs), >= 0",
               "Optimisation");
  addRunOption(app, "--label-smoothing", c.labelSmoothing, "Label smoothing, in [0, 1)",
               "Optimisation");
  addSharedFlag(app, "--model-ema", c.modelEma);
  addShared(app, "--model-ema-decay", c.modelEmaDecay);
  addShared(app, "--model-ema-steps", c.modelEmaSteps);
  addShared(app, "--mixup-alpha", c.mixupAlpha);
  addShared(app, "--cutmix-alpha", c.cutmixAlpha);
  addRunOption(app, "--eval-every", c.evalEvery, "Evaluate every K epochs (and after the last)",
               "Optimisation");
  addChoice(app, "--nan-policy", c.nanPolicy, engine::nanPolicies(),
            "A step whose loss or gradient is NaN or inf: stop (exit 1, the state before it "
            "saved) or skip it (warned, counted in metrics.jsonl)")
      ->group("Optimisation");
  addShared(app, "--seed", c.seed);
  addSharedFlag(app, "--sync-bn", c.syncBn);
  addSharedChoice(app, "--grad-compression", c.gradCompression,
                  distributed::gradCompressionNames());
  addShared(app, "--bucket-mb", c.bucketMb);
  addRunOption(app, "--stop-after-steps", c.stopAfterSteps,
               "Stop (with a checkpoint) once this many steps are done in total, >= 1 (-1: "
               "never); rerun to resume. A run already there stops at once",
               "Optimisation");
  addRunOption(app, "--checkpoint-every-steps", c.checkpointEverySteps,
               "Also write checkpoint.pth every K steps in total, besides each epoch's end, so "
               "that a restart (fixres launch --max-restarts) loses little work; >= 0 (0: off)",
               "Optimisation");
  app.add_flag("--allow-config-change", c.allowConfigChange,
               "Resume even when settings that define the run (architecture, classes, sizes, "
               "batch, accumulation, transform, sampler, seed, data) differ from the checkpoint's")
      ->group("Optimisation");
  addRunOption(app, "--log-every", c.logEvery, "Progress line every N iterations, >= 1", "Output");
  app.add_flag_callback(
         "--no-tensorboard", [&c] { c.tensorboard = false; },
         "Write no TensorBoard event file (events.out.tfevents.*) in the run folder")
      ->group("Output");
  addSharedFlag(app, "--cpu", cpu);
  // Every value on its own is checked once parsing is done, before any file is opened: the same
  // checks (and messages) as the engine's.
  app.parse_complete_callback([&c] {
    try {
      c.validateValues();
    } catch (const UsageError& e) {
      throw CLI::ValidationError(e.what());
    }
  });
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
  co.sharedMemory = !cluster.noSharedMemory;
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
