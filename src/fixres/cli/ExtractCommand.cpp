// `fixres extract` (main_extract) and `fixres eval-softmax` (main_evaluate_softmax).
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Npy.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::cli {

Command addExtractCommand(CLI::App& parent, GlobalOptions&) {
  auto* sub = parent.add_subcommand(
      "extract", "Write labels.npy, <arch>_softmax.npy, <arch>_logits.npy, <arch>_embedding.npy");
  struct State {
    ModelFlags model;
    ClusterOptions cluster;
    EvalFlags eval;
    std::string datasetPath, savePath;
    int inputSize = 224;
  };
  auto s = std::make_shared<State>();
  sub->set_config("--config", "", "TOML/INI file with any of these options");
  addModelOptions(*sub, s->model);
  sub->add_option("--dataset-path", s->datasetPath, "Image folder to extract")
      ->required()
      ->group("Data");
  sub->add_option("--save-path", s->savePath, "Output folder for the .npy files")
      ->required()
      ->group("Output");
  sub->add_option("--input-size", s->inputSize, "Test resolution")
      ->capture_default_str()
      ->group("Data");
  addEvalFlags(*sub, s->eval);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s]() -> int {
            distributed::WorldInfo world;
            auto comm =
                connectWorld(s->cluster, world, !s->eval.cpu && torch::cuda::is_available());
            auto dataset = data::openImageFolder(s->datasetPath);
            auto device = deviceFor(world, s->eval.cpu);
            auto model = loadModel(s->model, static_cast<int64_t>(dataset->classes().size()),
                                   device, "extract");
            if (engine::parseChannelsLast(s->eval.memoryFormat, device))
              engine::useChannelsLast(*model);
            auto o = valOptions(s->inputSize, s->eval, device);
            auto out = engine::extract(model, dataset, o, *comm);
            if (comm->rank() == 0) {
              makeDirectories(s->savePath);
              const std::string a = s->model.architecture;
              writeNpy(s->savePath + "/labels.npy", out.labels);
              writeNpy(s->savePath + "/" + a + "_logits.npy", out.logits);
              writeNpy(s->savePath + "/" + a + "_softmax.npy",
                       torch::softmax(out.logits.to(torch::kFloat64), 1).to(torch::kFloat32));
              writeNpy(s->savePath + "/" + a + "_embedding.npy", out.embeddings);
              std::cout << "extracted " << out.labels.size(0) << " images: logits "
                        << out.logits.size(1) << ", embedding " << out.embeddings.size(1) << " -> "
                        << s->savePath << std::endl;
            }
            return 0;
          }};
}

Command addEvalSoftmaxCommand(CLI::App& parent, GlobalOptions&) {
  auto* sub =
      parent.add_subcommand("eval-softmax", "Top-1/top-5 from saved softmax and labels (.npy)");
  struct State {
    std::string savePath, architecture = "ResNet50";
  };
  auto s = std::make_shared<State>();
  sub->add_option("--save-path", s->savePath, "Folder written by fixres extract")->required();
  sub->add_option("--architecture", s->architecture, "Name used in <arch>_softmax.npy")
      ->capture_default_str();
  return {sub, [s]() -> int {
            auto labels = readNpy(s->savePath + "/labels.npy");
            auto softmax = readNpy(s->savePath + "/" + s->architecture + "_softmax.npy");
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
