// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/engine/EvalJob.h"

namespace fixres::cli {
namespace {

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

// The results table's row of one size, on rank 0 (the header before the first).
void printRow(const engine::EvalResult& r, bool first) {
  if (first) std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
  std::printf("%6d %8.3f %8.3f %8.4f %8lld%s\n", r.inputSize, r.top1, r.top5, r.loss,
              static_cast<long long>(r.count), r.complete ? "" : " (interrupted)");
  std::fflush(stdout);
}

int runEval(EvalState& s, CLI::App& sub) {
  engine::EvalRequest request;
  const bool sizesGiven = sub.get_option("--input-size")->count() > 0;
  request.model =
      modelRequest(sub, s.model,
                   sizesGiven ? engine::parseSizeList(s.sizes, "--input-size") : std::vector<int>{},
                   s.eval.settings.resizeMode, s.classNamesFile);
  request.imnetPath = s.imnetPath;
  request.datasetPath = s.datasetPath;
  request.labelsCsv = s.labelsCsv;
  request.report = s.report;
  request.heldOut = s.heldOut;
  request.limit = s.limit;
  request.eval = s.eval.settings;
  request.fileIndex = s.fileIndex;
  checkEvalOutputs(s);
  const engine::EvalJob job(request);
  auto rank = connectRank(s.cluster, s.eval.cpu, s.eval.numerics);
  const bool printing = rank.comm->rank() == 0;
  size_t printed = 0;
  const auto outcome = job.run(rank.run, *rank.comm, [&](const engine::EvalResult& r) {
    if (printing) printRow(r, printed++ == 0);
  });
  if (printing && !s.json.empty()) writeFileAtomic(s.json, job.document(outcome).dump(2) + "\n");
  if (outcome.signal != 0) {
    log::warn("eval stopped by signal ", outcome.signal, " after ", outcome.results.size(), " of ",
              job.model().sizes.size(), " size(s)",
              s.json.empty() ? "" : "; partial results written to " + s.json);
    return 128 + outcome.signal;
  }
  job.checkClassOrder(outcome);
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
