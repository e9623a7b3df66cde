// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/engine/EvalJob.h"

namespace fixres::cli {
namespace {

// What `fixres eval` is given on its command line: the job's request (its own flags are rows,
// engine::EvalRequest::visitSettings) and the model, cluster and evaluation flags.
struct EvalState {
  engine::EvalRequest request;
  engine::ModelSpec model;
  ClusterOptions cluster;
  EvalFlags eval;  // eval.request.sizes: --input-size's list (default: the folder's, else 224)
  std::string classNamesFile;
};

// The flags: the shared ones, then eval's own rows (the rules between them:
// EvalRequest::validate, run before anything is read or written).
void addEvalJobFlags(CLI::App& sub, EvalState& s) {
  engine::EvalRequest& r = s.request;
  bindSetting(sub, kImnetPathRow, r.imnetPath);
  bindSetting(sub, kDatasetPathRow, r.datasetPath);
  bindSetting(sub, kClassNamesRow, s.classNamesFile);
  SettingsBinder{sub}(engine::kInputSizeRow, s.eval.request.sizes, engine::kSizeListSyntax);
  bindSetting(sub, engine::kSkipBadImagesRow, s.eval.settings.skipBadImages);
  addIndexCacheFlag(sub, r.fileIndex);
  engine::EvalRequest::visitSettings(r, SettingsBinder{sub});
}

// The output paths, checked before any work: none may overwrite an input.
void checkEvalOutputs(const CLI::App& sub, const engine::EvalRequest& r) {
  std::vector<NamedPath> inputs = givenInputs(sub, {"--json", "--report"});
  inputs.push_back({"--imnet-path", r.imnetPath});
  inputs.push_back({"--fit-temperature", r.heldOut});
  if (!r.json.empty()) {
    checkOutputPath("--json", r.json, inputs);
    checkOutputFolder(r.json, "--json");
  }
  if (!r.report.empty()) checkOutputPath("--report", r.report, inputs);
}

// The results table's row of one size, on rank 0 (the header before the first).
void printRow(const engine::EvalResult& r, bool first) {
  if (first) std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
  std::printf("%6d %8.3f %8.3f %8.4f %8lld%s\n", r.inputSize, r.top1, r.top5, r.loss,
              static_cast<long long>(r.count), r.complete ? "" : " (interrupted)");
  std::fflush(stdout);
}

int runEval(EvalState& s, CLI::App& sub) {
  engine::EvalRequest request = s.request;
  request.model = modelRequest(s.eval, s.model, s.classNamesFile);
  request.eval = s.eval.settings;
  request.validate();
  checkEvalOutputs(sub, request);
  const engine::EvalJob job(request);
  auto rank = connectForModel(s.cluster, s.eval, job.model());
  const bool printing = rank.comm->rank() == 0;
  size_t printed = 0;
  const auto outcome = job.run(rank.run, *rank.comm, [&](const engine::EvalResult& r) {
    if (printing) printRow(r, printed++ == 0);
  });
  if (printing && !request.json.empty())
    writeFileAtomic(request.json, jsonText(roundedNumbers(job.document(outcome)), 2) + "\n");
  if (outcome.signal != 0) {
    log::warn("eval stopped by signal ", outcome.signal, " after ", outcome.results.size(), " of ",
              job.model().sizes().size(), " size(s)",
              request.json.empty() ? "" : "; partial results written to " + request.json);
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
  bindSetting(*sub, engine::kUseEmaRow, s->model.useEma);
  addEvalJobFlags(*sub, *s);
  addEvalFlags(*sub, s->eval);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, sub]() -> int { return runEval(*s, *sub); }};
}

}  // namespace fixres::cli
