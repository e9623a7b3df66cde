// `fixres sweep`: top-1 over a range of test resolutions, optionally after FixRes fine-tuning
// at each one, with exactly the options `eval` and `finetune` use, and the model's speed at each;
// table, JSON, an SVG plot with the train resolution, the apparent-size suggestion and the best
// resolutions marked, top-1 against images per second with the Pareto front, and the resolution
// chosen within a latency or throughput budget as a model folder (config.json).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/StopSignal.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/Resolution.h"
#include "fixres/models/Registry.h"
#include "fixres/sweep/Sweep.h"

namespace fixres::cli {
namespace {

struct SweepState {
  engine::SweepOptions sweep;  // sizes, eval and numerics are set from the flags below
  ClusterOptions cluster;
  EvalFlags eval;
  std::optional<int> trainSize;  // --train-size as given
};

// The table on rank 0, a row as each size is done; the header once the first row is ready (an
// error before it prints no table). Speed columns when it is measured.
// A precision column when several precisions are swept, a crop column when several crop fractions.
// Per --eval-set a column of its top-1 (after fine-tuning with --finetune), headed by its name.
void printSweepRow(const engine::SweepOptions& o, const engine::SweepRow& row, bool first) {
  const bool crops = o.cropPcts.size() > 1, speed = o.latencyBatches > 0;
  const bool precisions = o.precisions.size() > 1;
  if (first) {
    std::printf("%6s", "size");
    if (precisions) std::printf(" %9s", "precision");
    if (crops) std::printf(" %6s", "crop");
    std::printf(" %10s", "top1");
    if (o.finetune) std::printf(" %14s", "top1 finetuned");
    if (speed) std::printf(" %10s %10s", "img/s", "ms/batch");
    for (const auto& set : o.evalSets) std::printf(" %12.12s", set.name.c_str());
    std::printf("\n");
  }
  std::printf("%6d", row.size);
  if (precisions) std::printf(" %9s", engine::precisionName(row.precision));
  if (crops) std::printf(" %6.3f", row.cropPct);
  std::printf(" %10.3f", row.plain.top1);
  if (o.finetune) std::printf(" %14.3f", row.finetuned.top1);
  if (speed) std::printf(" %10.1f %10.2f", row.imagesPerS, row.latencyMs);
  for (const auto& score : o.finetune ? row.setsFinetuned : row.sets)
    std::printf(" %12.3f", score.top1);
  std::printf("\n");
  std::fflush(stdout);
}

// The best resolutions and the suggestion, printed by rank 0 before the files are written.
void printSweepSummary(const engine::SweepOptions& o, const engine::SweepResult& r) {
  // ", bf16" and ", crop 0.95" after a size when several precisions or crops are swept.
  const auto crop = [&o](const engine::SweepRow& row) {
    char text[48] = "";
    if (o.precisions.size() > 1)
      std::snprintf(text, sizeof(text), ", %s", engine::precisionName(row.precision));
    if (o.cropPcts.size() > 1)
      std::snprintf(text + std::strlen(text), sizeof(text) - std::strlen(text), ", crop %g",
                    row.cropPct);
    return std::string(text);
  };
  const engine::SweepRow& bp = r.rows[r.bestPlain];
  std::printf("best test resolution without fine-tuning: %d (top-1 %.3f%s)\n", bp.size,
              bp.plain.top1, crop(bp).c_str());
  if (o.finetune) {
    const engine::SweepRow& bt = r.rows[r.bestFinetuned];
    std::printf("best test resolution with fine-tuning: %d (top-1 %.3f%s)\n", bt.size,
                bt.finetuned.top1, crop(bt).c_str());
  }
  std::printf("apparent-size suggestion (fixres suggest-resolution): %.1f\n", r.suggested);
  if (r.chosen) {
    const engine::SweepRow& c = r.rows[*r.chosen];
    const bool budget = o.maxLatencyMs > 0 || o.minThroughput > 0;
    std::printf("chosen test resolution%s: %d (top-1 %.3f%s", budget ? " within the budget" : "",
                c.size, engine::decidingTop1(c, o.finetune), crop(c).c_str());
    if (std::isfinite(c.imagesPerS))
      std::printf(", %.1f img/s, %.2f ms/batch", c.imagesPerS, c.latencyMs);
    std::printf(")\n");
  }
}

// The budget in words, for the error when nothing meets it.
std::string budgetText(const engine::SweepOptions& o) {
  char text[160] = "";
  if (o.maxLatencyMs > 0 && o.minThroughput > 0)
    std::snprintf(text, sizeof(text), "--max-latency-ms %g and --min-throughput %g", o.maxLatencyMs,
                  o.minThroughput);
  else if (o.maxLatencyMs > 0)
    std::snprintf(text, sizeof(text), "--max-latency-ms %g", o.maxLatencyMs);
  else if (o.minThroughput > 0)
    std::snprintf(text, sizeof(text), "--min-throughput %g", o.minThroughput);
  std::string out = text;
  if (o.maxShiftLoss > 0) {
    std::snprintf(text, sizeof(text), "--max-shift-loss %g", o.maxShiftLoss);
    out += (out.empty() ? "" : " and ") + std::string(text);
  }
  return out;
}

// The train size: --train-size, else the one a model folder records (a run's --input-size, a hub
// folder's input_size), else 224.
int sweepTrainSize(const engine::SweepOptions& o, const std::optional<int>& given) {
  if (given) return *given;
  if (!engine::isModelFolder(o.model.weightPath)) return o.trainSize;
  const engine::ModelCard card = engine::readModelFolder(o.model.weightPath);
  return card.trainSize > 0 ? card.trainSize : o.trainSize;
}

// Every path the sweep reads, for the one output-vs-input check: the paths given (the weights,
// --config), the split, train/ for the fine-tuning and each --eval-set folder. --imnet-path itself
// only holds the splits: a sweep folder beside them is no harm, one that holds them is refused.
std::vector<NamedPath> sweepInputs(const CLI::App& sub, const engine::SweepOptions& o) {
  std::vector<NamedPath> inputs = givenInputs(sub, {"--out", "--imnet-path"});
  inputs.push_back({"--imnet-path", o.imnetPath + "/" + o.split});
  if (o.finetune) inputs.push_back({"--imnet-path", o.imnetPath + "/train"});
  for (const auto& set : o.evalSets) inputs.push_back({"--eval-set " + set.name, set.path});
  return inputs;
}

// The settings read from the flags, checked before anything is written.
engine::SweepOptions sweepOptions(const CLI::App& sub, const SweepState& s) {
  engine::SweepOptions o = s.sweep;
  FIXRES_CHECK(!o.model.weightPath.empty(), UsageError, "sweep needs --weight-path");
  checkOutputPath("--out", o.out, sweepInputs(sub, o));
  o.trainSize = sweepTrainSize(o, s.trainSize);
  if (o.sizes.empty())
    o.sizes = engine::sweepSizes(o.trainSize, models::outputStride(o.model.architectureName()));
  o.eval = s.eval.settings;
  o.numerics = s.eval.numerics;
  o.validate();
  return o;
}

}  // namespace

Command addSweepCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "sweep",
      "Top-1 vs test resolution, with and without FixRes fine-tuning at each; table and plot");
  auto s = std::make_shared<SweepState>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->sweep.model);
  bindSetting(*sub, kImnetPathRow, s->sweep.imnetPath)->required();
  bindSetting(*sub, kTrainSizeRow, s->trainSize);
  bindSetting(*sub, kFinetuneRow, s->sweep.finetune);
  bindSetting(*sub, engine::kAbsoluteLrRow, s->sweep.absoluteLr);
  engine::SweepOptions::visitSettings(s->sweep, SettingsBinder{*sub});
  addEvalFlags(*sub, s->eval);
  bindSetting(*sub, engine::kSkipBadImagesRow, s->eval.settings.skipBadImages);
  bindSetting(*sub, engine::kSeedRow, s->sweep.seed);
  bindSetting(*sub, kOutRow, s->sweep.out);
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, sub]() -> int {
            const engine::SweepOptions o = sweepOptions(*sub, *s);
            auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics.options());
            installStopHandlers();
            const bool printing = rank.comm->rank() == 0;
            size_t printed = 0;
            const bool speed = o.latencyBatches > 0;
            std::optional<FolderLock> lock;
            auto result =
                engine::runSweep(o, *rank.comm, rank.run, lock, [&](const engine::SweepRow& r) {
                  if (printing) printSweepRow(o, r, printed++ == 0);
                });
            if (result.stopSignal != 0) {
              if (printing)
                std::fprintf(stderr,
                             "sweep stopped by %s after %zu cell(s): nothing written but the "
                             "fine-tuning checkpoints; rerun the same command to resume\n",
                             stopSignalName(result.stopSignal), result.rows.size());
              return 128 + result.stopSignal;
            }
            if (!printing) return 0;
            printSweepSummary(o, result);
            engine::writeSweep(o, result);
            std::string wrote =
                o.out + "/sweep.json, " + o.out + "/sweep.svg, " + o.out + "/sweep_grid.svg";
            if (speed) wrote += ", " + o.out + "/sweep_speed.svg";
            if (!result.modelConfig.empty()) wrote += ", " + o.out + "/config.json";
            std::printf("wrote %s\n", wrote.c_str());
            if (!result.chosen) {
              // The fastest size, to say how far the budget is.
              const engine::SweepRow* fastest = &result.rows.front();
              for (const auto& r : result.rows)
                if (r.imagesPerS > fastest->imagesPerS) fastest = &r;
              FIXRES_FAIL(BudgetError, "no test resolution meets ", budgetText(o),
                          " (the fastest, ", fastest->size, " px, runs ", fastest->imagesPerS,
                          " img/s, ", fastest->latencyMs, " ms per batch of ",
                          o.latencyBatch > 0 ? o.latencyBatch : o.eval.batch, ")");
            }
            return 0;
          }};
}

}  // namespace fixres::cli
