// `fixres predict`: the top-k classes of image files, folders, lists or stdin's paths, with class
// names, at the weights' test resolution; CSV, JSON or JSON lines to stdout or a file.
#include <iostream>
#include <string>
#include <vector>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/engine/InferenceJobs.h"

namespace fixres::cli {
namespace {

struct PredictState {
  engine::ModelSpec model;
  ClusterOptions cluster;
  EvalFlags eval;
  std::vector<std::string> inputs;
  std::string out, classNamesFile;
  engine::PredictOptions output;
};

}  // namespace

Command addPredictCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "predict",
      "Top-k classes of images (files, folders, *.txt/*.lst lists, - for paths on stdin) at the "
      "weights' test resolution, as CSV, JSON or JSON lines");
  auto s = std::make_shared<PredictState>();
  addConfigFile(*sub);
  bindSetting(*sub, engine::kPredictInputsRow, s->inputs)->required();
  addModelOptions(*sub, s->model);
  bindSetting(*sub, engine::kUseEmaRow, s->model.useEma);
  bindSetting(*sub, engine::kInputSizeRow, s->eval.inputSize);
  engine::PredictOptions::visitSettings(s->output, SettingsBinder{*sub});
  bindSetting(*sub, kOutRow, s->out);
  bindSetting(*sub, kClassNamesRow, s->classNamesFile);
  addEvalFlags(*sub, s->eval);
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s, sub]() -> int {
        if (!s->out.empty()) {
          checkOutputPath("--out", s->out, givenInputs(*sub, {"--out"}));
          checkOutputFolder(s->out, "--out");
        }
        engine::PredictRequest request;
        request.model = modelRequest(s->eval, s->model, s->classNamesFile);
        request.inputs = s->inputs;
        request.output = s->output;
        request.eval = s->eval.settings;
        const engine::PredictJob job(request, std::cin);
        auto rank = connectForModel(s->cluster, s->eval, job.model());
        const auto rows = job.run(rank.run, *rank.comm);
        if (rank.comm->rank() != 0) return 0;
        const std::string text = engine::formatPredictions(rows, job.model().classNames,
                                                           job.model().classCount(), s->output);
        size_t bad = 0;
        for (const auto& r : rows) bad += r.error.empty() ? 0 : 1;
        if (s->out.empty()) {
          std::cout << text << std::flush;
        } else {
          writeFileAtomic(s->out, text);
        }
        std::cerr << "predicted " << rows.size() - bad << " of " << rows.size() << " images at "
                  << job.model().size() << " px"
                  << (bad > 0 ? " (" + std::to_string(bad) + " unreadable: see their rows)" : "")
                  << (s->out.empty() ? "" : " -> " + s->out) << std::endl;
        return 0;
      }};
}

}  // namespace fixres::cli
