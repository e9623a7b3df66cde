// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <cstdint>
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"

namespace fixres::cli {

Command addEvalCommand(CLI::App& parent) {
  auto* sub =
      parent.add_subcommand("eval", "Top-1/top-5 and loss at one or several test resolutions");
  struct State {
    engine::ModelSpec model;
    ClusterOptions cluster;
    EvalFlags eval;
    std::string imnetPath, datasetPath, sizes = "224", json;
    int64_t limit = -1;
    data::FileIndexOptions fileIndex;
  };
  auto s = std::make_shared<State>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  addSharedFlag(*sub, "--use-ema", s->model.useEma);
  auto* imnet = addShared(*sub, "--imnet-path", s->imnetPath);
  addShared(*sub, "--dataset-path", s->datasetPath)->excludes(imnet);
  addShared(*sub, "--input-size", s->sizes);
  sub->add_option("--limit", s->limit, "Only the first N images (-1: all)")
      ->check(allOrAtLeastOne(INT64_MAX))
      ->group("Data");
  addSharedFlag(*sub, "--skip-bad-images", s->eval.settings.skipBadImages);
  addIndexCacheFlag(*sub, s->fileIndex);
  addEvalFlags(*sub, s->eval);
  sub->add_option("--json", s->json, "Also write the results to this JSON file")
      ->check(outputPathValidator("--json"))
      ->group("Output");
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s, sub]() -> int {
        FIXRES_CHECK(!s->imnetPath.empty() || !s->datasetPath.empty(), UsageError,
                     "eval needs --imnet-path or --dataset-path");
        FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "eval needs --weight-path");
        int folderSize = 0;
        if (applyFolderTestSettings(*sub, s->model, &folderSize, &s->eval.settings.resizeMode) &&
            folderSize > 0)
          s->sizes = std::to_string(folderSize);
        auto sizes = parseSizes(s->sizes, "--input-size");
        if (!s->json.empty()) {
          checkOutputPath("--json", s->json,
                          {{"--imnet-path", s->imnetPath}, {"--dataset-path", s->datasetPath}});
          checkOutputFolder(s->json, "--json");
        }
        auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics);
        auto dataset = data::openDataset(
            s->datasetPath.empty() ? s->imnetPath + "/val" : s->datasetPath, s->fileIndex);
        auto model =
            engine::buildModel(s->model, static_cast<int64_t>(dataset->classes().size()), rank.run)
                .model;
        // A first SIGINT/SIGTERM ends the size being evaluated at its next batch; the results
        // so far are printed and written (marked partial) before exiting 128 + signal.
        installStopHandlers();
        const bool printing = rank.comm->rank() == 0;
        nlohmann::json results = nlohmann::json::array();
        for (size_t k = 0; k < sizes.size() && stopSignal() == 0; ++k) {
          auto o =
              engine::evalOptions(s->eval.settings, sizes[k], s->model.preprocessing(), rank.run);
          o.limit = s->limit;
          o.stopOnSignal = true;
          auto r = engine::evaluate(model, dataset, o, *rank.comm);
          results.push_back(r.toJson());
          if (!printing) continue;
          // The header once the first row is ready: an error before it prints no table.
          if (k == 0)
            std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
          std::printf("%6d %8.3f %8.3f %8.4f %8lld%s\n", sizes[k], r.top1, r.top5, r.loss,
                      static_cast<long long>(r.count), r.complete ? "" : " (interrupted)");
          std::fflush(stdout);
        }
        const int signal = stopSignal();
        if (printing && !s->json.empty()) {
          nlohmann::json doc = {
              {"architecture", s->model.architecture},
              {"weights", s->model.weightPath},
              {"resize_mode", choiceName(image::resizeModes(), s->eval.settings.resizeMode)},
              {"test_flip", s->eval.settings.testFlip},
              {"results", results}};
          if (signal != 0) {
            doc["partial"] = true;
            doc["stopped_by_signal"] = signal;
          }
          writeFileAtomic(s->json, doc.dump(2) + "\n");
        }
        if (signal != 0) {
          log::warn("eval stopped by signal ", signal, " after ", results.size(), " of ",
                    sizes.size(), " size(s)",
                    s->json.empty() ? "" : "; partial results written to " + s->json);
          return 128 + signal;
        }
        return 0;
      }};
}

}  // namespace fixres::cli
