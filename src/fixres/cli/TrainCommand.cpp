// `fixres train` and `fixres finetune`: the reference's main_resnet50_scratch and
// main_finetune, with the same flag names and defaults.
#include <csignal>
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/train/RunFolder.h"
#include "fixres/train/Trainer.h"

namespace fixres::cli {
namespace {

struct RunState {
  engine::RunConfig cfg;
  ClusterOptions cluster;
  std::string imnetPath;
  bool cpu = false;
};

// The signal a stopped run exits with (128 + it): the one the ranks agreed on, except SIGHUP,
// which the training loop handles (and reports) as the SIGTERM it stands for.
int exitSignal(int agreed) {
  if (agreed != SIGTERM || receivedStopSignal() != SIGHUP) return agreed;
  log::info("SIGHUP (the terminal closed) was handled as SIGTERM");
  return SIGHUP;
}

// The run's last lines, on stdout: each evaluation as a sentence, then the steps and the folder.
void printSummary(const std::string& name, const engine::RunSummary& summary,
                  const std::string& runDir) {
  const auto line = [&summary](const char* when, const engine::EvalResult& r) {
    std::printf("%s: top-1 %.2f %%, top-5 %.2f %% on %lld %s images at %d px\n", when, r.top1,
                r.top5, static_cast<long long>(r.count), summary.split.c_str(), r.inputSize);
  };
  const bool tuning = name == "finetune";
  if (summary.before.count > 0) line("before fine-tuning", summary.before);
  if (summary.after.count > 0) line(tuning ? "after fine-tuning" : "after training", summary.after);
  if (summary.afterEma.count > 0)
    line(tuning ? "after fine-tuning (EMA weights)" : "after training (EMA weights)",
         summary.afterEma);
  std::printf("%s: %lld steps in %.1f s%s; run folder %s\n", name.c_str(),
              static_cast<long long>(summary.steps), summary.seconds,
              summary.stoppedEarly ? " (stopped early: the same command resumes)" : "",
              runDir.c_str());
  std::fflush(stdout);
}

Command addRunCommand(CLI::App& parent, const std::string& name, const std::string& help,
                      engine::RunMode mode) {
  auto* sub = parent.add_subcommand(name, help);
  auto s = std::make_shared<RunState>();
  s->cfg = engine::RunConfig::forMode(mode);
  addConfigFile(*sub);
  addTrainingOptions(*sub, s->cfg, s->imnetPath, s->cpu);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, name, mode]() -> int {
            auto& c = s->cfg;
            c.trainPath = s->imnetPath + "/train";
            c.valPath = s->imnetPath + "/val";
            auto rank = connectRank(s->cluster, s->cpu, c.numerics);
            // Parsing checked one process; the world's size scales the rate further.
            c.checkLearningRate(rank.world.worldSize);
            c.runDir = engine::runFolder(s->cluster.flags.sharedFolderPath, mode, rank.world.jobId);
            // Before anything is written there, and held until the run ends.
            const auto lock = engine::lockRunFolder(c.runDir, *rank.comm);
            installStopHandlers();
            engine::Trainer trainer(c, *rank.comm, rank.run);
            auto summary = trainer.run();
            if (rank.comm->rank() == 0) {
              printSummary(name, summary, c.runDir);
            }
            // Stopped by a signal after saving: the conventional 128 + signal number.
            return summary.stopSignal ? 128 + exitSignal(summary.stopSignal) : 0;
          }};
}

}  // namespace

Command addTrainCommand(CLI::App& parent) {
  return addRunCommand(parent, "train",
                       "Train from scratch (FixRes recipe: RandomResizedCrop 'full' at 224, "
                       "repeated augmentation x3)",
                       engine::RunMode::kTrain);
}

Command addFinetuneCommand(CLI::App& parent) {
  return addRunCommand(parent, "finetune",
                       "FixRes fine-tuning: classifier + last BatchNorm statistics at the test "
                       "resolution",
                       engine::RunMode::kFinetune);
}

}  // namespace fixres::cli
