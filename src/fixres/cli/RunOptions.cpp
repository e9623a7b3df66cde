// Shared option groups of the run subcommands.
#include "fixres/cli/RunOptions.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "fixres/cli/SharedRows.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/Sampler.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/image/Transform.h"
#include "fixres/models/Catalogue.h"
#include "fixres/models/Registry.h"
#include "fixres/optim/Optimizer.h"
#include "fixres/step/Schedule.h"

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
  bindSetting(app, kNoIndexCacheRow, index.enabled);
}

void addDownloadOptions(CLI::App& app, DownloadOptions& d) {
  // The default is resolved here, not shown in --help: it is this machine's home folder.
  bindSetting(app, kCacheDirRow, d.cacheDir);
  d.cacheDir = defaultCacheDir();
  bindSetting(app, kDownloadTimeoutRow, d.stallTimeoutS);
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

// The published weights `name` completing `m`, once the command line and --config are both
// applied: their URL and checksum become the weight path; their architecture, filter and
// normalisation apply where not given (unset or empty). An --architecture that was given must be
// theirs.
void applyPretrained(const std::string& name, engine::ModelSpec& m) {
  FIXRES_CHECK(m.weightPath.empty(), UsageError,
               "--pretrained excludes --weight-path: give one (--pretrained ", name,
               " fetches its weights)");
  const models::PublishedWeights* w = nullptr;
  try {
    w = &models::publishedWeights(name);
    models::architectureInfo(w->architecture);
  } catch (const UsageError& e) {
    if (w == nullptr) throw CLI::ValidationError(e.what());
    throw CLI::ValidationError("--pretrained", name + " is a " + w->architecture +
                                                   ", an architecture fixres does not build yet "
                                                   "('fixres weights fetch " +
                                                   name + "' downloads the file)");
  }
  if (m.architectureGiven()) {
    const std::string arch = m.architectureOrDefault() == "EfficientNet"
                                 ? m.efficientNetModel
                                 : m.architectureOrDefault();
    if (canonicalArchitecture(arch) != canonicalArchitecture(w->architecture))
      throw CLI::ValidationError(
          "--pretrained", name + " is a " + w->architecture + ", not --architecture " + arch +
                              " (leave --architecture out, or name the same one)");
  } else {
    m.architecture = w->architecture;
  }
  m.weightPath = remoteFileSpec({w->url, w->sha256});
  if (!m.interpolation)
    m.interpolation = w->bicubic ? image::Filter::kBicubic : image::Filter::kBilinear;
  if (w->halfNormalization && m.mean.empty()) m.mean = {0.5f, 0.5f, 0.5f};
  if (w->halfNormalization && m.std.empty()) m.std = {0.5f, 0.5f, 0.5f};
}

// --pretrained NAME and the download options, after the model's rows are bound on `app`. The
// returned step completes the spec from the merged values: the published weights named
// (applyPretrained), else a model folder's values (engine/ModelCard.h), where not given; then the
// defaults of what is still unset.
std::function<void()> completeModelOptions(CLI::App& app, engine::ModelSpec& m) {
  addDownloadOptions(app, m.download);
  auto name = std::make_shared<std::optional<std::string>>();
  bindSetting(app, kPretrainedRow, *name);
  return [&m, name] {
    if (*name) applyPretrained(**name, m);
    if (engine::isModelFolder(m.weightPath))
      engine::applyModelCard(engine::readModelFolder(m.weightPath), m);
    m = m.withDefaults();
  };
}

}  // namespace

void addModelOptions(CLI::App& app, engine::ModelSpec& m) {
  engine::ModelSpec::visitSettings(m, SettingsBinder{app});
  auto pretrained = completeModelOptions(app, m);
  app.callback([&app, pretrained] { checkMerged(app, pretrained); });
}

void addNumericsOptions(CLI::App& app, engine::NumericsOptions& n) {
  const engine::NumericsChoices& c = engine::numericsChoices();
  const SettingsBinder bind{app};
  bind(engine::kPrecisionRow, n.precision, c.precision);
  bind(engine::kMemoryFormatRow, n.memoryFormat, c.memoryFormat);
  bind(engine::kRuntimeRow, n.runtime, c.runtime);
}

void addTrainingOptions(CLI::App& app, engine::RunConfig& c, std::string& imnetPath, bool& cpu) {
  // Every row of the run's settings (its model's included) that this subcommand offers.
  engine::RunConfig::visitSettings(c, SettingsBinder{app});
  auto pretrained = completeModelOptions(app, c.model);
  bindSetting(app, kImnetPathRow, imnetPath)->required();
  addIndexCacheFlag(app, c.fileIndex);
  bindSetting(app, kNoTensorboardRow, c.tensorboard);
  bindSetting(app, kCpuRow, cpu);
  // Once the command line and --config are both applied, before any file is opened: --pretrained,
  // then every value and what the values imply, with the engine's checks and messages.
  app.callback([&app, &c, pretrained] {
    checkMerged(app, [&c, &pretrained] {
      pretrained();
      c.validateValues();
    });
  });
}

void addEvalFlags(CLI::App& app, EvalFlags& f) {
  bindSetting(app, engine::kBatchRow, f.settings.batch);
  bindSetting(app, engine::kWorkersRow, f.settings.workers);
  bindSetting(app, engine::kTestFlipRow, f.settings.testFlip);
  engine::ModelRequest::visitSettings(f.request, SettingsBinder{app});
  engine::NumericsRequest::visitSettings(f.numerics, SettingsBinder{app});
  bindSetting(app, kCpuRow, f.cpu);
}

Rank connectRank(const ClusterOptions& cluster, bool cpuOnly,
                 const engine::NumericsOptions& numerics) {
  Rank r;
  r.world = resolveWorld(cluster);
  distributed::ConnectOptions co;
  co.backend = cluster.backend;
  co.cuda = !cpuOnly && torch::cuda::is_available();
  co.networkInterface = cluster.networkInterface;
  co.sharedMemory = cluster.sharedMemory;
  r.comm = distributed::connect(r.world, co);
  if (r.world.distributed())
    log::info("world: ", r.world.worldSize, " processes (", r.world.source, "), backend ",
              r.comm->backendName());
  r.run = engine::makeRunDevice(r.world.localRank, cpuOnly, numerics);
  return r;
}

Rank connectForModel(const ClusterOptions& cluster, const EvalFlags& eval,
                     const engine::ResolvedModel& model) {
  const bool onCpu = eval.cpu || !torch::cuda::is_available();
  return connectRank(cluster, eval.cpu, model.numerics(eval.numerics, onCpu));
}

engine::ModelRequest modelRequest(const EvalFlags& eval, const engine::ModelSpec& spec,
                                  const std::string& classNames) {
  engine::ModelRequest r = eval.request;
  r.spec = spec;
  if (eval.inputSize) r.sizes = {*eval.inputSize};
  r.classNamesFile = classNames;
  return r;
}

}  // namespace fixres::cli
