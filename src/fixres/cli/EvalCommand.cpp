// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
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
  };
  auto s = std::make_shared<State>();
  sub->set_config("--config", "", "TOML/INI file with any of these options");
  addModelOptions(*sub, s->model);
  addShared(*sub, "--imnet-path", s->imnetPath);
  addShared(*sub, "--dataset-path", s->datasetPath);
  addShared(*sub, "--input-size", s->sizes);
  sub->add_option("--limit", s->limit, "Only the first N images (-1: all)")->group("Data");
  addSharedFlag(*sub, "--skip-bad-images", s->eval.settings.skipBadImages);
  addEvalFlags(*sub, s->eval);
  sub->add_option("--json", s->json, "Also write the results to this JSON file")->group("Output");
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s]() -> int {
        FIXRES_CHECK(!s->imnetPath.empty() || !s->datasetPath.empty(), UsageError,
                     "eval needs --imnet-path or --dataset-path");
        FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "eval needs --weight-path");
        auto sizes = parseSizes(s->sizes, "--input-size");
        auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics);
        auto dataset =
            data::openImageFolder(s->datasetPath.empty() ? s->imnetPath + "/val" : s->datasetPath);
        auto model =
            engine::buildModel(s->model, static_cast<int64_t>(dataset->classes().size()), rank.run)
                .model;
        nlohmann::json results = nlohmann::json::array();
        if (rank.comm->rank() == 0)
          std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
        for (int size : sizes) {
          auto o = engine::evalOptions(s->eval.settings, size, s->model.preprocessing, rank.run);
          o.limit = s->limit;
          auto r = engine::evaluate(model, dataset, o, *rank.comm);
          results.push_back(r.toJson());
          if (rank.comm->rank() == 0) {
            std::printf("%6d %8.3f %8.3f %8.4f %8lld\n", size, r.top1, r.top5, r.loss,
                        static_cast<long long>(r.count));
            std::fflush(stdout);
          }
        }
        if (rank.comm->rank() == 0 && !s->json.empty()) {
          nlohmann::json doc = {
              {"architecture", s->model.architecture},
              {"weights", s->model.weightPath},
              {"resize_mode", choiceName(image::resizeModes(), s->eval.settings.resizeMode)},
              {"test_flip", s->eval.settings.testFlip},
              {"results", results}};
          writeFileAtomic(s->json, doc.dump(2) + "\n");
        }
        return 0;
      }};
}

}  // namespace fixres::cli
