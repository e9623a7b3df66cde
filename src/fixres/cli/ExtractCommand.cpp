// `fixres extract` (main_extract) and `fixres eval-softmax` (main_evaluate_softmax).
#include <cstdio>
#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/Npy.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/InferenceJobs.h"

namespace fixres::cli {
namespace {

enum class SoftmaxVersion { kV1, kV2 };
const ChoiceTable<SoftmaxVersion>& softmaxVersions() {
  static const ChoiceTable<SoftmaxVersion> kTable = {
      "softmax version", {{"v1", SoftmaxVersion::kV1}, {"v2", SoftmaxVersion::kV2}}};
  return kTable;
}

// What eval-softmax can score: N integer labels in [0, C) and an N x C softmax of finite values,
// N and C >= 1. DataError (exit 3) naming the file and the problem.
void checkSoftmaxAndLabels(const torch::Tensor& softmax, const std::string& softmaxPath,
                           const torch::Tensor& labels, const std::string& labelsPath) {
  FIXRES_CHECK(labels.dim() == 1, DataError, labelsPath, ": labels must be a 1-d array, got shape ",
               labels.sizes());
  FIXRES_CHECK(labels.size(0) > 0, DataError, labelsPath, " is empty (no labels)");
  FIXRES_CHECK(!at::isFloatingType(labels.scalar_type()) && labels.scalar_type() != torch::kBool,
               DataError, labelsPath, ": labels must be integers, got ", labels.scalar_type());
  FIXRES_CHECK(softmax.dim() == 2 && softmax.size(0) == labels.size(0), DataError, softmaxPath,
               ": shape ", softmax.sizes(), " does not match the ", labels.size(0), " labels of ",
               labelsPath, " (expected ", labels.size(0), " x classes)");
  FIXRES_CHECK(softmax.size(1) > 0, DataError, softmaxPath, " has no classes (shape ",
               softmax.sizes(), ")");
  FIXRES_CHECK(at::isFloatingType(softmax.scalar_type()), DataError, softmaxPath,
               ": softmax must be floating point, got ", softmax.scalar_type());
  const auto wide = labels.to(torch::kLong);
  const auto bad = (wide < 0).logical_or(wide >= softmax.size(1)).nonzero();
  if (bad.size(0) > 0) {
    const int64_t i = bad[0].item<int64_t>();
    FIXRES_FAIL(DataError, labelsPath, ": label ", wide[i].item<int64_t>(), " at index ", i,
                " is out of range [0, ", softmax.size(1), ") (", bad.size(0),
                " label(s) out of range)");
  }
  const auto nonFinite = softmax.isfinite().logical_not().nonzero();
  if (nonFinite.size(0) > 0)
    FIXRES_FAIL(DataError, softmaxPath, ": value ",
                softmax[nonFinite[0][0]][nonFinite[0][1]].item<double>(), " at row ",
                nonFinite[0][0].item<int64_t>(), " is not finite (", nonFinite.size(0),
                " non-finite value(s))");
}

}  // namespace

Command addExtractCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "extract", "Write labels.npy, <arch>_softmax.npy, <arch>_logits.npy, <arch>_embedding.npy");
  struct State {
    engine::ModelSpec model;
    ClusterOptions cluster;
    EvalFlags eval;
    std::string datasetPath, savePath;
  };
  auto s = std::make_shared<State>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  bindSetting(*sub, engine::kUseEmaRow, s->model.useEma);
  bindSetting(*sub, kDatasetPathRow, s->datasetPath)->required();
  bindSetting(*sub, kSavePathRow, s->savePath)->required();
  bindSetting(*sub, engine::kInputSizeRow, s->eval.inputSize);
  addEvalFlags(*sub, s->eval);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, sub]() -> int {
            engine::ExtractRequest request;
            request.model = modelRequest(s->eval, s->model);
            request.datasetPath = s->datasetPath;
            request.savePath = s->savePath;
            request.eval = s->eval.settings;
            checkOutputPath("--save-path", s->savePath, givenInputs(*sub, {"--save-path"}));
            const engine::ExtractJob job(request);
            auto rank = connectForModel(s->cluster, s->eval, job.model());
            const auto r = job.run(rank.run, *rank.comm);
            if (rank.comm->rank() == 0)
              std::cout << "extracted " << r.images << " images: logits " << r.classes
                        << ", embedding " << r.embedding << " -> " << s->savePath << std::endl;
            return 0;
          }};
}

Command addEvalSoftmaxCommand(CLI::App& parent) {
  auto* sub =
      parent.add_subcommand("eval-softmax", "Top-1/top-5 from saved softmax and labels (.npy)");
  struct State {
    std::string savePath, architecture = "ResNet50";
    SoftmaxVersion version = SoftmaxVersion::kV1;
  };
  auto s = std::make_shared<State>();
  bindSetting(*sub, kSavePathRow, s->savePath)->required();
  bindSetting(*sub, engine::kArchitectureRow, s->architecture);
  bindSetting(*sub, kSoftmaxVersionRow, s->version, softmaxVersions());
  return {sub, [s]() -> int {
            const std::string labelsPath = s->savePath + "/labels.npy";
            const std::string softmaxPath =
                s->savePath + "/" + s->architecture +
                (s->version == SoftmaxVersion::kV2 ? "_softmax_v2.npy" : "_softmax.npy");
            auto labels = data::readNpy(labelsPath);
            auto softmax = data::readNpy(softmaxPath);
            checkSoftmaxAndLabels(softmax, softmaxPath, labels, labelsPath);
            auto [top1, top5] = engine::topkAccuracy(softmax, labels.to(torch::kLong));
            std::printf("top1 %.3f top5 %.3f images %lld\n", top1, top5,
                        static_cast<long long>(labels.size(0)));
            return 0;
          }};
}

}  // namespace fixres::cli
