// `fixres export`: weights in the layout the FixRes reference, torchvision or timm loads.
#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/engine/Export.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::cli {

Command addExportCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "export",
      "Write weights (any file --weight-path reads, e.g. a checkpoint) as the FixRes reference's "
      "{'model': {'module.*'}}, torchvision's or timm's state dict");
  struct State {
    engine::ModelSpec model;
    engine::ExportLayout format = engine::ExportLayout::kFixres;
    std::string out;
  };
  auto s = std::make_shared<State>();
  s->model.numClasses = 1000;
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  addSharedFlag(*sub, "--use-ema", s->model.useEma);
  addChoice(*sub, "--format", s->format, engine::exportLayouts(),
            "Layout written: fixres (the reference's loader), torchvision or timm")
      ->group("Output");
  addShared(*sub, "--out", s->out)->required();
  return {sub, [s]() -> int {
            FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "export needs --weight-path");
            checkOutputPath("--out", s->out);
            FIXRES_CHECK(s->model.numClasses >= 1, UsageError,
                         "export needs --num-classes >= 1 (the classifier's size)");
            engine::RunDevice cpu;
            auto built = engine::buildModel(s->model, s->model.numClasses, cpu);
            size_t n = engine::exportWeights(*built.model, s->format, s->out);
            std::cout << "exported " << n << " tensors of " << s->model.architectureName() << " as "
                      << choiceName(engine::exportLayouts(), s->format) << " -> " << s->out
                      << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli
