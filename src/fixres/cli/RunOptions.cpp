// Shared option groups of the run subcommands.
#include "fixres/cli/RunOptions.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

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
  bindSetting(app, sharedFlag("--no-index-cache"), index.enabled);
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

// The published weights `name` completing `m`, once the command line and --config are both
// applied: their URL and checksum become the weight path; their architecture, filter and
// normalisation apply where not given (`app`'s options say which were). An --architecture that
// was given must be theirs.
void applyPretrained(CLI::App& app, const std::string& name, engine::ModelSpec& m) {
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
  const auto given = [&app](const char* flag) { return app.get_option(flag)->count() > 0; };
  if (given("--architecture") || given("--EfficientNet-models")) {
    const std::string arch =
        m.architecture == "EfficientNet" ? m.efficientNetModel : m.architecture;
    if (canonicalArchitecture(arch) != canonicalArchitecture(w->architecture))
      throw CLI::ValidationError(
          "--pretrained", name + " is a " + w->architecture + ", not --architecture " + arch +
                              " (leave --architecture out, or name the same one)");
  } else {
    m.architecture = w->architecture;
  }
  m.weightPath = remoteFileSpec({w->url, w->sha256});
  if (!given("--interpolation"))
    m.interpolation = w->bicubic ? image::Filter::kBicubic : image::Filter::kBilinear;
  if (w->halfNormalization && !given("--mean")) m.mean = {0.5f, 0.5f, 0.5f};
  if (w->halfNormalization && !given("--std")) m.std = {0.5f, 0.5f, 0.5f};
}

// --pretrained NAME and the download options, after the model's rows are bound on `app`. The
// returned step applies the name (applyPretrained): the caller runs it on the merged values.
std::function<void()> completeModelOptions(CLI::App& app, engine::ModelSpec& m) {
  auto* weightPath = app.get_option("--weight-path");
  addDownloadOptions(app, m.download);
  auto name = std::make_shared<std::string>();
  const Setting& f = sharedFlag("--pretrained");
  app.add_option(f.flags, *name, f.help)->group(f.group)->excludes(weightPath);
  return [&app, &m, name] {
    if (!name->empty()) applyPretrained(app, *name, m);
    // A model folder (engine/ModelCard.h) completes what was not given.
    if (engine::isModelFolder(m.weightPath))
      engine::applyModelCard(engine::readModelFolder(m.weightPath), m, [&app](const char* flag) {
        return app.get_option(flag)->count() > 0;
      });
  };
}

}  // namespace

void addModelOptions(CLI::App& app, engine::ModelSpec& m) {
  engine::ModelSpec::visitSettings(m, SettingsBinder{app});
  auto pretrained = completeModelOptions(app, m);
  app.callback([&app, pretrained] { checkMerged(app, pretrained); });
}

void addNumericsOptions(CLI::App& app, engine::NumericsOptions& n, bool normalizeOn) {
  addSharedChoice(app, "--precision", n.precision, engine::numericsChoices().precision);
  addSharedChoice(app, "--memory-format", n.memoryFormat, engine::numericsChoices().memoryFormat);
  if (normalizeOn) {
    addSharedChoice(app, "--normalize-on", n.normalizeOn, engine::numericsChoices().normalizeOn);
    addSharedChoice(app, "--decode-on", n.decodeOn, engine::numericsChoices().decodeOn);
  }
  if (sharedFlag("--runtime").offeredTo(commandName(app)))
    addSharedChoice(app, "--runtime", n.runtime, engine::numericsChoices().runtime);
}

void addTrainingOptions(CLI::App& app, engine::RunConfig& c, std::string& imnetPath, bool& cpu) {
  // Every row of the run's settings (its model's included) that this subcommand offers.
  engine::RunConfig::visitSettings(c, SettingsBinder{app});
  auto pretrained = completeModelOptions(app, c.model);
  addShared(app, "--imnet-path", imnetPath)->required();
  addIndexCacheFlag(app, c.fileIndex);
  addSharedFlag(app, "--no-tensorboard", c.tensorboard);
  addSharedFlag(app, "--cpu", cpu);
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
  addShared(app, "--batch", f.settings.batch);
  addShared(app, "--workers", f.settings.workers);
  addSharedFlag(app, "--test-flip", f.settings.testFlip);
  engine::ModelRequest::visitSettings(f.request, SettingsBinder{app});
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
  co.sharedMemory = cluster.sharedMemory;
  r.comm = distributed::connect(r.world, co);
  if (r.world.distributed())
    log::info("world: ", r.world.worldSize, " processes (", r.world.source, "), backend ",
              r.comm->backendName());
  r.run = engine::makeRunDevice(r.world.localRank, cpuOnly, numerics);
  return r;
}

Rank connectForModel(const CLI::App& app, const ClusterOptions& cluster, const EvalFlags& eval,
                     const engine::ResolvedModel& model) {
  const auto given = [&app](const char* flag) {
    const CLI::Option* o = app.get_option_no_throw(flag);
    return o != nullptr && o->count() > 0;
  };
  const bool onCpu = eval.cpu || !torch::cuda::is_available();
  return connectRank(
      cluster, eval.cpu,
      model.numerics(eval.numerics, given("--runtime"), given("--precision"), onCpu));
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
