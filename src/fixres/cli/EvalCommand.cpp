// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/EvalReport.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelCard.h"

namespace fixres::cli {
namespace {

// One size with --report: every image's logits gathered on rank 0, which writes the report into
// `dir` (and keeps it in `kept`); every rank gets the summary.
engine::EvalResult reportSize(models::Model& model, std::shared_ptr<const data::Dataset> dataset,
                              std::shared_ptr<const data::Dataset> heldOut,
                              const engine::EvalOptions& o, const engine::ModelSpec& spec,
                              const std::string& dir, int size, distributed::Communicator& comm,
                              std::optional<engine::ClassReport>& kept) {
  auto ex = engine::extract(model, dataset, o, comm, /*embeddings=*/false);
  std::optional<engine::TemperatureFit> fit;
  std::string heldOutSource;
  if (heldOut && stopSignal() == 0) {
    auto h = o;
    h.limit = -1;
    auto held = engine::extract(model, heldOut, h, comm, /*embeddings=*/false);
    heldOutSource = heldOut->source();
    if (comm.rank() == 0) fit = engine::fitTemperature(held.logits, held.labels);
  }
  std::vector<double> summary(4, 0.0);
  if (comm.rank() == 0) {
    kept = engine::classReport(ex.logits, ex.labels);
    engine::ReportInfo info;
    info.architecture = spec.architecture;
    info.weights = spec.weightPath;
    info.dataset = dataset->source();
    info.inputSize = size;
    info.classNames = dataset->classes();
    info.complete = ex.complete;
    info.temperature = fit;
    info.temperatureDataset = heldOutSource;
    writeEvalReport(dir, ex.logits, ex.labels, *kept, info);
    summary = {kept->top1, kept->top5, kept->loss, static_cast<double>(kept->count)};
    log::info("report at ", size, " px -> ", dir, ": ECE ", 100 * kept->reliability.ece, " %",
              fit ? detail::concat("; temperature ", fit->temperature, " (fitted on ", fit->images,
                                   " held-out images)")
                  : std::string());
  }
  summary = distributed::allReduceScalars(comm, summary);
  engine::EvalResult r;
  r.top1 = summary[0];
  r.top5 = summary[1];
  r.loss = summary[2];
  r.count = static_cast<int64_t>(summary[3]);
  r.inputSize = size;
  r.complete = ex.complete;
  return r;
}

// What `fixres eval` is given on its command line.
struct EvalState {
  engine::ModelSpec model;
  ClusterOptions cluster;
  EvalFlags eval;
  std::string imnetPath, datasetPath, sizes = "224", json;
  std::string report, heldOut, labelsCsv, classNamesFile;
  int64_t limit = -1;
  data::FileIndexOptions fileIndex;
};

// The images evaluated: the dataset, its labels, how many, which sizes.
void addEvalDataFlags(CLI::App& sub, EvalState& s) {
  auto* imnet = addShared(sub, "--imnet-path", s.imnetPath);
  auto* dataset = addShared(sub, "--dataset-path", s.datasetPath)->excludes(imnet);
  sub.add_option("--labels-csv", s.labelsCsv,
                 "Labels of a flat folder of images (--dataset-path): file,label rows, such as "
                 "ImageNet's LOC_val_solution.csv")
      ->check(CLI::ExistingFile)
      ->needs(dataset)
      ->group("Data");
  addShared(sub, "--class-names", s.classNamesFile);
  addShared(sub, "--input-size", s.sizes);
  sub.add_option("--limit", s.limit, "Only the first N images (-1: all)")
      ->check(allOrAtLeastOne(INT64_MAX))
      ->group("Data");
  addSharedFlag(sub, "--skip-bad-images", s.eval.settings.skipBadImages);
  addIndexCacheFlag(sub, s.fileIndex);
}

// What is written besides the table: the JSON results and the report folder.
void addEvalOutputFlags(CLI::App& sub, EvalState& s) {
  sub.add_option("--json", s.json, "Also write the results to this JSON file")
      ->check(outputPathValidator("--json"))
      ->group("Output");
  auto* report =
      sub.add_option("--report", s.report,
                     "Also write per-class accuracy, the confusion matrix (CSV, SVG heat map), "
                     "the expected calibration error and a reliability diagram into this folder "
                     "(one sub-folder per size when several)")
          ->check(outputPathValidator("--report"))
          ->group("Output");
  sub.add_option("--fit-temperature", s.heldOut,
                 "Fit the softmax temperature on this held-out dataset and report the scaled "
                 "probabilities' calibration too (with --report)")
      ->needs(report)
      ->group("Output");
}

// The output paths, checked before any work: none may overwrite an input.
void checkEvalOutputs(const EvalState& s) {
  if (!s.json.empty()) {
    checkOutputPath("--json", s.json,
                    {{"--imnet-path", s.imnetPath}, {"--dataset-path", s.datasetPath}});
    checkOutputFolder(s.json, "--json");
  }
  if (!s.report.empty())
    checkOutputPath("--report", s.report,
                    {{"--imnet-path", s.imnetPath},
                     {"--dataset-path", s.datasetPath},
                     {"--fit-temperature", s.heldOut}});
}

// The weights' class names: --class-names, else what their folder records.
std::vector<std::string> evalModelNames(const EvalState& s) {
  if (!s.classNamesFile.empty()) return engine::readClassNames(s.classNamesFile);
  if (engine::isModelFolder(s.model.weightPath))
    return engine::readModelFolder(s.model.weightPath).classNames;
  return {};
}

// What the sizes evaluated so far gave: every result, the best top-1 and the last report.
struct EvalRun {
  nlohmann::json results = nlohmann::json::array();
  double bestTop1 = 0;
  std::optional<engine::ClassReport> lastReport;
};

// Every size in turn until done or stopped by a signal, a table row printed on rank 0 after each.
EvalRun evaluateSizes(const EvalState& s, models::Model& model,
                      std::shared_ptr<const data::Dataset> dataset,
                      std::shared_ptr<const data::Dataset> heldOut, const std::vector<int>& sizes,
                      const Rank& rank) {
  const bool printing = rank.comm->rank() == 0;
  EvalRun run;
  for (size_t k = 0; k < sizes.size() && stopSignal() == 0; ++k) {
    auto o = engine::evalOptions(s.eval.settings, sizes[k], s.model.preprocessing(), rank.run);
    o.limit = s.limit;
    o.stopOnSignal = true;
    engine::EvalResult r;
    if (s.report.empty()) {
      r = engine::evaluate(model, dataset, o, *rank.comm);
    } else {
      const std::string dir =
          sizes.size() == 1
              ? s.report
              : (std::filesystem::path(s.report) / (std::to_string(sizes[k]) + "px")).string();
      r = reportSize(model, dataset, heldOut, o, s.model, dir, sizes[k], *rank.comm,
                     run.lastReport);
    }
    run.bestTop1 = std::max(run.bestTop1, r.top1);
    run.results.push_back(r.toJson());
    if (!printing) continue;
    // The header once the first row is ready: an error before it prints no table.
    if (k == 0) std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
    std::printf("%6d %8.3f %8.3f %8.4f %8lld%s\n", sizes[k], r.top1, r.top5, r.loss,
                static_cast<long long>(r.count), r.complete ? "" : " (interrupted)");
    std::fflush(stdout);
  }
  return run;
}

// --json: the settings and every size's result, marked partial when a signal stopped the run.
void writeEvalJson(const EvalState& s, const nlohmann::json& results, int signal) {
  nlohmann::json doc = {
      {"architecture", s.model.architecture},
      {"weights", s.model.weightPath},
      {"resize_mode", choiceName(image::resizeModes(), s.eval.settings.resizeMode)},
      {"test_flip", s.eval.settings.testFlip},
      {"results", results}};
  if (signal != 0) {
    doc["partial"] = true;
    doc["stopped_by_signal"] = signal;
  }
  writeFileAtomic(s.json, doc.dump(2) + "\n");
}

// Near chance although the run that made the weights recorded much better: say why.
void checkClassOrder(const EvalState& s, const EvalRun& run, const data::Dataset& dataset,
                     const std::vector<std::string>& modelNames) {
  const auto& classes = dataset.classes();
  if (engine::nearChance(run.bestTop1, classes.size())) {
    if (auto recorded = engine::recordedTop1(s.model.weightPath);
        recorded && engine::highAboveChance(recorded->top1, classes.size()))
      FIXRES_FAIL(DataError,
                  engine::classOrderMessage(run.bestTop1, classes.size(), *recorded, modelNames,
                                            classes, run.lastReport ? &*run.lastReport : nullptr));
  }
}

int runEval(EvalState& s, CLI::App& sub) {
  FIXRES_CHECK(!s.imnetPath.empty() || !s.datasetPath.empty(), UsageError,
               "eval needs --imnet-path or --dataset-path");
  FIXRES_CHECK(!s.model.weightPath.empty(), UsageError, "eval needs --weight-path");
  int folderSize = 0;
  if (applyFolderTestSettings(sub, s.model, &folderSize, &s.eval.settings.resizeMode) &&
      folderSize > 0)
    s.sizes = std::to_string(folderSize);
  auto sizes = parseSizes(s.sizes, "--input-size");
  checkEvalOutputs(s);
  const std::vector<std::string> modelNames = evalModelNames(s);
  auto rank = connectRank(s.cluster, s.eval.cpu, s.eval.numerics);
  auto dataset =
      !s.labelsCsv.empty()
          ? data::openLabelsCsv(s.datasetPath, s.labelsCsv, modelNames)
          : data::openDataset(s.datasetPath.empty() ? s.imnetPath + "/val" : s.datasetPath,
                              s.fileIndex);
  std::shared_ptr<data::Dataset> heldOut;
  if (!s.heldOut.empty()) {
    heldOut = data::openDataset(s.heldOut, s.fileIndex);
    data::checkSameClasses(*heldOut, *dataset);
  }
  auto model = engine::buildModel(s.model.forSizes(sizes),
                                  static_cast<int64_t>(dataset->classes().size()), rank.run)
                   .model;
  // A first SIGINT/SIGTERM ends the size being evaluated at its next batch; the results so far
  // are printed and written (marked partial) before exiting 128 + signal.
  installStopHandlers();
  const EvalRun run = evaluateSizes(s, model, dataset, heldOut, sizes, rank);
  const int signal = stopSignal();
  if (rank.comm->rank() == 0 && !s.json.empty()) writeEvalJson(s, run.results, signal);
  if (signal != 0) {
    log::warn("eval stopped by signal ", signal, " after ", run.results.size(), " of ",
              sizes.size(), " size(s)",
              s.json.empty() ? "" : "; partial results written to " + s.json);
    return 128 + signal;
  }
  checkClassOrder(s, run, *dataset, modelNames);
  return 0;
}

}  // namespace

Command addEvalCommand(CLI::App& parent) {
  auto* sub =
      parent.add_subcommand("eval", "Top-1/top-5 and loss at one or several test resolutions");
  auto s = std::make_shared<EvalState>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  addSharedFlag(*sub, "--use-ema", s->model.useEma);
  addEvalDataFlags(*sub, *s);
  addEvalFlags(*sub, s->eval);
  addEvalOutputFlags(*sub, *s);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, sub]() -> int { return runEval(*s, *sub); }};
}

}  // namespace fixres::cli
