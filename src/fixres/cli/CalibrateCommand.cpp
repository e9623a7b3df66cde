// `fixres calibrate`: FixRes without labels, the BatchNorm statistics re-estimated at the test
// resolution from unlabelled images, written as a weight file that eval, extract and finetune read.
#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Calibrate.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::cli {

Command addCalibrateCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "calibrate",
      "Re-estimate every BatchNorm's statistics at the test resolution from unlabelled images "
      "(no gradient, no labels) and write the weights");
  struct State {
    engine::ModelSpec model;
    EvalFlags eval;
    std::string datasetPath, out;
    int inputSize = 224;
    int64_t maxImages = -1;
    uint64_t seed = 0;
    engine::ExportLayout format = engine::ExportLayout::kFixres;
  };
  auto s = std::make_shared<State>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  addShared(*sub, "--dataset-path", s->datasetPath)->required();
  addShared(*sub, "--input-size", s->inputSize);
  addEvalFlags(*sub, s->eval);
  addSharedFlag(*sub, "--skip-bad-images", s->eval.settings.skipBadImages);
  addShared(*sub, "--seed", s->seed);
  sub->add_option("--max-images", s->maxImages,
                  "Estimate from a random subset of this many images (-1: every image)")
      ->capture_default_str()
      ->check(allOrAtLeastOne(int64_t{1} << 40))
      ->group("Data");
  addChoice(*sub, "--format", s->format, engine::exportLayouts(),
            "Layout written: fixres (the reference's loader), torchvision or timm")
      ->group("Output");
  addShared(*sub, "--out", s->out)->required();
  return {
      sub, [s]() -> int {
        FIXRES_CHECK(!s->model.weightPath.empty(), UsageError,
                     "calibrate needs --weight-path (the trained weights to calibrate)");
        auto dataset = data::openUnlabelledImages(s->datasetPath);
        int64_t classes = s->model.numClasses;
        // The classifier size the data declares (class folders, a shard index's classes).
        if (classes == 0)
          classes = static_cast<int64_t>(data::declaredClasses(s->datasetPath).size());
        FIXRES_CHECK(
            classes >= 1, UsageError, "calibrate: ", s->datasetPath,
            " has no class folders and no shard index naming the classes: give --num-classes (the "
            "classifier's size)");
        auto run = engine::makeRunDevice(0, s->eval.cpu, s->eval.numerics);
        auto built = engine::buildModel(s->model, classes, run, s->seed);
        engine::CalibrateOptions o;
        o.eval = engine::evalOptions(s->eval.settings, s->inputSize, s->model.preprocessing(), run,
                                     s->seed);
        o.maxImages = s->maxImages;
        auto r = engine::calibrate(built.model, dataset, o);
        built.model->to(torch::kCPU);
        engine::exportWeights(*built.model, s->format, s->out);
        std::cout << "calibrated " << r.layers << " BatchNorm layers of "
                  << s->model.architectureName() << " at " << s->inputSize << " px on " << r.images
                  << " images (" << r.batches << " batches) -> " << s->out << std::endl;
        return 0;
      }};
}

}  // namespace fixres::cli
