// `fixres eval`: top-1/top-5 and loss at one or several test resolutions, sharded exactly
// over the ranks; results as a table and optionally JSON (main_evaluate_imnet).
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::cli {

Command addEvalCommand(CLI::App& parent, GlobalOptions&) {
  auto* sub =
      parent.add_subcommand("eval", "Top-1/top-5 and loss at one or several test resolutions");
  struct State {
    ModelFlags model;
    ClusterOptions cluster;
    EvalFlags eval;
    std::string imnetPath, datasetPath, sizes = "224", json;
    int64_t limit = -1;
    bool skipBad = false;
  };
  auto s = std::make_shared<State>();
  sub->set_config("--config", "", "TOML/INI file with any of these options");
  addModelOptions(*sub, s->model);
  sub->add_option("--imnet-path", s->imnetPath, "Image folder root: evaluates its val/")
      ->group("Data");
  sub->add_option("--dataset-path", s->datasetPath,
                  "Image folder to evaluate (instead of --imnet-path)")
      ->group("Data");
  sub->add_option("--input-size", s->sizes, "Test resolution(s), comma-separated: 224,288,320,384")
      ->capture_default_str()
      ->group("Data");
  sub->add_option("--limit", s->limit, "Only the first N images (-1: all)")->group("Data");
  sub->add_flag("--skip-bad-images", s->skipBad,
                "Skip unreadable images (counted) instead of failing")
      ->group("Data");
  addEvalFlags(*sub, s->eval);
  sub->add_option("--json", s->json, "Also write the results to this JSON file")->group("Output");
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s]() -> int {
        FIXRES_CHECK(!s->imnetPath.empty() || !s->datasetPath.empty(), UsageError,
                     "eval needs --imnet-path or --dataset-path");
        FIXRES_CHECK(s->eval.resizeMode == "fixres" || s->eval.resizeMode == "shorter", UsageError,
                     "--resize-mode must be fixres or shorter, got '", s->eval.resizeMode, "'");
        auto sizes = parseSizes(s->sizes, "--input-size");
        distributed::WorldInfo world;
        auto comm = connectWorld(s->cluster, world, !s->eval.cpu && torch::cuda::is_available());
        auto dataset =
            data::openImageFolder(s->datasetPath.empty() ? s->imnetPath + "/val" : s->datasetPath);
        auto device = deviceFor(world, s->eval.cpu);
        auto model =
            loadModel(s->model, static_cast<int64_t>(dataset->classes().size()), device, "eval");
        if (engine::parseChannelsLast(s->eval.memoryFormat, device))
          engine::useChannelsLast(*model);
        nlohmann::json results = nlohmann::json::array();
        if (comm->rank() == 0)
          std::printf("%6s %8s %8s %8s %8s\n", "size", "top1", "top5", "loss", "images");
        for (int size : sizes) {
          auto o = valOptions(size, s->eval, device);
          o.skipBadImages = s->skipBad;
          o.limit = s->limit;
          auto r = engine::evaluate(model, dataset, o, *comm);
          results.push_back(r.toJson());
          if (comm->rank() == 0) {
            std::printf("%6d %8.3f %8.3f %8.4f %8lld\n", size, r.top1, r.top5, r.loss,
                        static_cast<long long>(r.count));
            std::fflush(stdout);
          }
        }
        if (comm->rank() == 0 && !s->json.empty()) {
          nlohmann::json doc = {{"architecture", s->model.architecture},
                                {"weights", s->model.weightPath},
                                {"resize_mode", s->eval.resizeMode},
                                {"test_flip", s->eval.testFlip},
                                {"results", results}};
          writeFileAtomic(s->json, doc.dump(2) + "\n");
        }
        return 0;
      }};
}

}  // namespace fixres::cli
