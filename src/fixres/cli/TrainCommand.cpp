// `fixres train` and `fixres finetune`: the reference's main_resnet50_scratch and
// main_finetune, with the same flag names and defaults.
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/engine/Trainer.h"

namespace fixres::cli {
namespace {

struct RunState {
  engine::RunConfig cfg;
  ModelFlags model;
  ClusterOptions cluster;
  std::string imnetPath;
  bool cpu = false;
};

Command addRunCommand(CLI::App& parent, const std::string& name, const std::string& help,
                      engine::RunMode mode) {
  auto* sub = parent.add_subcommand(name, help);
  auto s = std::make_shared<RunState>();
  s->cfg.mode = mode;
  if (mode == engine::RunMode::kFinetune) {
    // FixRes ResNet-50 fine-tuning recipe.
    s->cfg.inputSize = 384;
    s->cfg.epochs = 56;
    s->cfg.learningRate = 1e-3;
    s->cfg.trainTransform = "val";
    s->cfg.sampler = "distributed";
  }
  sub->set_config("--config", "", "TOML/INI file with any of these options (flags override it)");
  addTrainingOptions(*sub, s->cfg, s->model, s->imnetPath);
  addClusterOptions(*sub, s->cluster);
  if (mode == engine::RunMode::kFinetune) {
    sub->add_flag("--finetune-bn-affine", s->cfg.finetuneBnAffine,
                  "Also train the last BatchNorm's weight and bias (paper variant)")
        ->group("Optimisation");
    sub->add_option("--eval-size", s->cfg.evalSize, "Evaluation resolution (0: --input-size)")
        ->group("Data");
  }
  sub->add_flag("--test-flip", s->cfg.testFlip, "Evaluate with horizontal-flip averaging")
      ->group("Data");
  sub->add_flag("--cpu", s->cpu, "Run on the CPU even when CUDA is available");
  return {sub, [s, name]() -> int {
            distributed::WorldInfo world;
            auto comm = connectWorld(s->cluster, world, !s->cpu && torch::cuda::is_available());
            auto& c = s->cfg;
            c.architecture = s->model.architecture;
            c.weightPath = s->model.weightPath;
            c.numClasses = s->model.numClasses;
            c.skipClassifier = s->model.skipClassifier;
            c.trainPath = s->imnetPath + "/train";
            c.valPath = s->imnetPath + "/val";
            c.runDir = runFolder(s->cluster.flags.sharedFolderPath, name, world.jobId);
            installStopHandlers();
            engine::Trainer trainer(c, *comm, deviceFor(world, s->cpu));
            auto summary = trainer.run();
            if (comm->rank() == 0) {
              if (summary.before.count > 0)
                std::cout << "before: size " << summary.before.inputSize << " top1 "
                          << summary.before.top1 << " top5 " << summary.before.top5 << "\n";
              if (summary.after.count > 0)
                std::cout << "after: size " << summary.after.inputSize << " top1 "
                          << summary.after.top1 << " top5 " << summary.after.top5 << "\n";
              std::cout << name << ": " << summary.steps << " steps in " << summary.seconds << " s"
                        << (summary.stoppedEarly ? " (stopped early, resumable)" : "")
                        << ", run folder " << c.runDir << std::endl;
            }
            // Stopped by a signal after saving: the conventional 128 + signal number.
            return summary.stopSignal ? 128 + summary.stopSignal : 0;
          }};
}

}  // namespace

Command addTrainCommand(CLI::App& parent, GlobalOptions&) {
  return addRunCommand(parent, "train",
                       "Train from scratch (FixRes recipe: RandomResizedCrop 'full' at 224, "
                       "repeated augmentation x3)",
                       engine::RunMode::kTrain);
}

Command addFinetuneCommand(CLI::App& parent, GlobalOptions&) {
  return addRunCommand(parent, "finetune",
                       "FixRes fine-tuning: classifier + last BatchNorm statistics at the test "
                       "resolution",
                       engine::RunMode::kFinetune);
}

}  // namespace fixres::cli
