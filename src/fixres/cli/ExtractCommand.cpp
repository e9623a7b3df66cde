// `fixres extract` (main_extract) and `fixres eval-softmax` (main_evaluate_softmax).
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/Npy.h"
#include "fixres/engine/Evaluator.h"

namespace fixres::cli {

Command addExtractCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "extract", "Write labels.npy, <arch>_softmax.npy, <arch>_logits.npy, <arch>_embedding.npy");
  struct State {
    engine::ModelSpec model;
    ClusterOptions cluster;
    EvalFlags eval;
    std::string datasetPath, savePath;
    int inputSize = 224;
  };
  auto s = std::make_shared<State>();
  sub->set_config("--config", "", "TOML/INI file with any of these options");
  addModelOptions(*sub, s->model);
  addShared(*sub, "--dataset-path", s->datasetPath)->required();
  addShared(*sub, "--save-path", s->savePath)->required();
  addShared(*sub, "--input-size", s->inputSize);
  addEvalFlags(*sub, s->eval);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s]() -> int {
            FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "extract needs --weight-path");
            auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics);
            auto dataset = data::openImageFolder(s->datasetPath);
            auto model = engine::buildModel(
                             s->model, static_cast<int64_t>(dataset->classes().size()), rank.run)
                             .model;
            auto o = engine::evalOptions(s->eval.settings, s->inputSize, s->model.preprocessing,
                                         rank.run);
            auto out = engine::extract(model, dataset, o, *rank.comm);
            if (rank.comm->rank() == 0) {
              makeDirectories(s->savePath);
              const std::string a = s->model.architecture;
              data::writeNpy(s->savePath + "/labels.npy", out.labels);
              data::writeNpy(s->savePath + "/" + a + "_logits.npy", out.logits);
              data::writeNpy(s->savePath + "/" + a + "_softmax.npy",
                             torch::softmax(out.logits.to(torch::kFloat64), 1).to(torch::kFloat32));
              data::writeNpy(s->savePath + "/" + a + "_embedding.npy", out.embeddings);
              std::cout << "extracted " << out.labels.size(0) << " images: logits "
                        << out.logits.size(1) << ", embedding " << out.embeddings.size(1) << " -> "
                        << s->savePath << std::endl;
            }
            return 0;
          }};
}

Command addEvalSoftmaxCommand(CLI::App& parent) {
  auto* sub =
      parent.add_subcommand("eval-softmax", "Top-1/top-5 from saved softmax and labels (.npy)");
  struct State {
    std::string savePath, architecture = "ResNet50";
  };
  auto s = std::make_shared<State>();
  addShared(*sub, "--save-path", s->savePath)->required();
  addShared(*sub, "--architecture", s->architecture);
  return {sub, [s]() -> int {
            auto labels = data::readNpy(s->savePath + "/labels.npy");
            auto softmax = data::readNpy(s->savePath + "/" + s->architecture + "_softmax.npy");
            FIXRES_CHECK(
                labels.dim() == 1 && softmax.dim() == 2 && softmax.size(0) == labels.size(0),
                DataError, s->savePath, ": labels (", labels.sizes(), ") and softmax (",
                softmax.sizes(), ") do not match");
            auto [top1, top5] = engine::topkAccuracy(softmax, labels.to(torch::kLong));
            std::printf("top1 %.3f top5 %.3f images %lld\n", top1, top5,
                        static_cast<long long>(labels.size(0)));
            return 0;
          }};
}

}  // namespace fixres::cli
