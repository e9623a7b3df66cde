// `fixres sweep`: top-1 over a range of test resolutions, optionally after FixRes fine-tuning
// at each one, with exactly the options `eval` and `finetune` use; table, JSON and an SVG plot
// with the train resolution, the apparent-size suggestion and the best resolutions marked.
#include <cstdint>
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/engine/Resolution.h"
#include "fixres/engine/Sweep.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {
namespace {

struct SweepState {
  engine::SweepOptions sweep;  // sizes, eval and numerics are set from the flags below
  ClusterOptions cluster;
  EvalFlags eval;
  std::string sizes;
};

// The table on rank 0, a row as each size is done; the header once the first row is ready (an
// error before it prints no table).
void printSweepRow(const engine::SweepRow& row, bool finetune, bool first) {
  if (first) std::printf("%6s %10s %14s\n", "size", "top1", finetune ? "top1 finetuned" : "");
  if (finetune)
    std::printf("%6d %10.3f %14.3f\n", row.size, row.plain.top1, row.finetuned.top1);
  else
    std::printf("%6d %10.3f\n", row.size, row.plain.top1);
  std::fflush(stdout);
}

// The best resolutions and the suggestion, printed by rank 0 before the files are written.
void printSweepSummary(const engine::SweepOptions& o, const engine::SweepResult& r) {
  const engine::SweepRow& bp = r.rows[r.bestPlain];
  std::printf("best test resolution without fine-tuning: %d (top-1 %.3f)\n", bp.size,
              bp.plain.top1);
  if (o.finetune) {
    const engine::SweepRow& bt = r.rows[r.bestFinetuned];
    std::printf("best test resolution with fine-tuning: %d (top-1 %.3f)\n", bt.size,
                bt.finetuned.top1);
  }
  std::printf("apparent-size suggestion (fixres suggest-resolution): %.1f\n", r.suggested);
}

}  // namespace

Command addSweepCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "sweep",
      "Top-1 vs test resolution, with and without FixRes fine-tuning at each; table and plot");
  auto s = std::make_shared<SweepState>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->sweep.model);
  addShared(*sub, "--imnet-path", s->sweep.imnetPath)->required();
  sub->add_option("--split", s->sweep.split,
                  "Folder under --imnet-path to measure on (choose settings on a held-out split, "
                  "not the test set)")
      ->capture_default_str();
  addShared(*sub, "--train-size", s->sweep.trainSize);
  sub->add_option("--sizes", s->sizes,
                  "Test resolutions, comma-separated (default: the multiples of the network's "
                  "stride from 0.6x to 1.8x the train size, and the train size)");
  addSharedFlag(*sub, "--finetune", s->sweep.finetune);
  sub->add_option("--finetune-epochs", s->sweep.finetuneEpochs, "Fine-tuning epochs per resolution")
      ->check(intIn(1, 100000))
      ->capture_default_str();
  sub->add_option("--finetune-iterations", s->sweep.finetuneIterations,
                  "Cap on iterations per fine-tuning epoch (-1: the whole train split)")
      ->check(allOrAtLeastOne(INT64_MAX));
  sub->add_option("--finetune-lr", s->sweep.finetuneLr,
                  "Fine-tuning base learning rate (scaled as FixRes)")
      ->check(finiteIn(0, 1e3, /*openLow=*/true))
      ->capture_default_str();
  addSharedFlag(*sub, "--absolute-lr", s->sweep.absoluteLr);
  addEvalFlags(*sub, s->eval);
  addShared(*sub, "--seed", s->sweep.seed);
  addShared(*sub, "--out", s->sweep.out);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s]() -> int {
            engine::SweepOptions o = s->sweep;
            FIXRES_CHECK(!o.model.weightPath.empty(), UsageError, "sweep needs --weight-path");
            // What it reads: the split, and train/ for the fine-tuning.
            checkOutputPath("--out", o.out,
                            {{"--imnet-path", o.imnetPath + "/" + o.split},
                             {"--imnet-path", o.finetune ? o.imnetPath + "/train" : ""}});
            o.sizes = s->sizes.empty()
                          ? engine::sweepSizes(o.trainSize,
                                               models::outputStride(o.model.architectureName()))
                          : parseSizes(s->sizes, "--sizes");
            o.eval = s->eval.settings;
            o.numerics = s->eval.numerics;
            o.validate();
            auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics);
            const bool printing = rank.comm->rank() == 0;
            size_t printed = 0;
            auto result = engine::runSweep(o, *rank.comm, rank.run, [&](const engine::SweepRow& r) {
              if (printing) printSweepRow(r, o.finetune, printed++ == 0);
            });
            if (!printing) return 0;
            printSweepSummary(o, result);
            engine::writeSweep(o, result);
            std::printf("wrote %s/sweep.json and %s/sweep.svg\n", o.out.c_str(), o.out.c_str());
            return 0;
          }};
}

}  // namespace fixres::cli
