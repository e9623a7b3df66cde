// `fixres sweep`: top-1 over a range of test resolutions, optionally after FixRes fine-tuning
// at each one, with exactly the options `eval` and `finetune` use; table, JSON and an SVG plot
// with the train resolution, the apparent-size suggestion and the best resolutions marked.
#include <cstdint>
#include <cstdio>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/SvgPlot.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/Resolution.h"
#include "fixres/engine/RunFolder.h"
#include "fixres/engine/Trainer.h"
#include "fixres/models/Registry.h"

namespace fixres::cli {
namespace {

struct SweepState {
  engine::ModelSpec model;
  ClusterOptions cluster;
  EvalFlags eval;
  std::string imnetPath, split = "holdout", sizes, out = "sweep";
  int trainSize = 224, finetuneEpochs = 1;
  int64_t finetuneIterations = -1;
  double finetuneLr = 1e-3;
  bool finetune = false, absoluteLr = false;
  uint64_t seed = 0;
};

// The `fixres finetune` run sweep makes at `size`: the FixRes recipe with the sweep's model,
// evaluation settings and numerics.
engine::RunConfig finetuneRun(const SweepState& s, int size) {
  auto c = engine::RunConfig::forMode(engine::RunMode::kFinetune);
  c.model = s.model;
  c.trainPath = s.imnetPath + "/train";
  c.valPath = s.imnetPath + "/" + s.split;
  c.inputSize = size;
  c.resizeMode = s.eval.settings.resizeMode;
  c.batch = static_cast<int>(s.eval.settings.batch);
  c.workers = s.eval.settings.workers;
  c.testFlip = s.eval.settings.testFlip;
  c.numerics = s.eval.numerics;
  c.epochs = s.finetuneEpochs;
  c.iterationCap = s.finetuneIterations;
  c.learningRate = s.finetuneLr;
  c.absoluteLr = s.absoluteLr;
  c.seed = s.seed;
  c.logEvery = 1000000;
  c.runDir = s.out + "/finetune_" + std::to_string(size);
  return c;
}

size_t bestOf(const std::vector<double>& v) {
  size_t b = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[b]) b = i;
  return b;
}

}  // namespace

Command addSweepCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "sweep",
      "Top-1 vs test resolution, with and without FixRes fine-tuning at each; table and plot");
  auto s = std::make_shared<SweepState>();
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  addShared(*sub, "--imnet-path", s->imnetPath)->required();
  sub->add_option("--split", s->split,
                  "Folder under --imnet-path to measure on (choose settings on a held-out split, "
                  "not the test set)")
      ->capture_default_str();
  addShared(*sub, "--train-size", s->trainSize);
  sub->add_option("--sizes", s->sizes,
                  "Test resolutions, comma-separated (default: the multiples of the network's "
                  "stride from 0.6x to 1.8x the train size, and the train size)");
  addSharedFlag(*sub, "--finetune", s->finetune);
  sub->add_option("--finetune-epochs", s->finetuneEpochs, "Fine-tuning epochs per resolution")
      ->check(intIn(1, 100000))
      ->capture_default_str();
  sub->add_option("--finetune-iterations", s->finetuneIterations,
                  "Cap on iterations per fine-tuning epoch (-1: the whole train split)")
      ->check(allOrAtLeastOne(INT64_MAX));
  sub->add_option("--finetune-lr", s->finetuneLr,
                  "Fine-tuning base learning rate (scaled as FixRes)")
      ->check(finiteIn(0, 1e3, /*openLow=*/true))
      ->capture_default_str();
  addSharedFlag(*sub, "--absolute-lr", s->absoluteLr);
  addEvalFlags(*sub, s->eval);
  addShared(*sub, "--seed", s->seed);
  addShared(*sub, "--out", s->out);
  addClusterOptions(*sub, s->cluster);
  return {
      sub, [s]() -> int {
        FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "sweep needs --weight-path");
        std::vector<int> sizes =
            s->sizes.empty() ? engine::sweepSizes(s->trainSize,
                                                  models::outputStride(s->model.architectureName()))
                             : parseSizes(s->sizes, "--sizes");
        // Everything a fine-tuning run needs is checked before the first evaluation.
        if (s->finetune) finetuneRun(*s, sizes.front()).validate();
        auto rank = connectRank(s->cluster, s->eval.cpu, s->eval.numerics);
        auto& comm = *rank.comm;
        auto dataset = data::openDataset(s->imnetPath + "/" + s->split);
        if (s->finetune) data::openDataset(s->imnetPath + "/train");
        auto model =
            engine::buildModel(s->model, static_cast<int64_t>(dataset->classes().size()), rank.run)
                .model;
        if (comm.rank() == 0) makeDirectories(s->out);
        auto suggestion = engine::suggestResolution(s->trainSize);
        nlohmann::json rows = nlohmann::json::array();
        std::vector<double> xs, plain, tuned;
        for (int size : sizes) {
          auto r = engine::evaluate(
              model, dataset,
              engine::evalOptions(s->eval.settings, size, s->model.preprocessing(), rank.run),
              comm);
          nlohmann::json row = {
              {"size", size}, {"top1", r.top1}, {"top5", r.top5}, {"loss", r.loss}};
          xs.push_back(size);
          plain.push_back(r.top1);
          double ft = -1;
          if (s->finetune) {
            auto c = finetuneRun(*s, size);
            const auto lock = engine::lockRunFolder(c.runDir, comm);
            engine::Trainer t(c, comm, rank.run);
            auto summary = t.run();
            ft = summary.after.top1;
            tuned.push_back(ft);
            row["top1_finetuned"] = ft;
            row["top5_finetuned"] = summary.after.top5;
            row["finetuned_weights"] = c.runDir + "/checkpoint.pth";
          }
          rows.push_back(row);
          if (comm.rank() == 0) {
            // The header once the first row is ready: an error before it prints no table.
            if (rows.size() == 1)
              std::printf("%6s %10s %14s\n", "size", "top1", s->finetune ? "top1 finetuned" : "");
            if (s->finetune)
              std::printf("%6d %10.3f %14.3f\n", size, r.top1, ft);
            else
              std::printf("%6d %10.3f\n", size, r.top1);
            std::fflush(stdout);
          }
        }
        if (comm.rank() != 0) return 0;
        size_t bp = bestOf(plain);
        std::printf("best test resolution without fine-tuning: %d (top-1 %.3f)\n", sizes[bp],
                    plain[bp]);
        nlohmann::json doc = {{"train_size", s->trainSize},
                              {"split", s->split},
                              {"suggested_size", suggestion.suggested},
                              {"rows", rows},
                              {"best_plain", sizes[bp]}};
        if (s->finetune) {
          size_t bt = bestOf(tuned);
          std::printf("best test resolution with fine-tuning: %d (top-1 %.3f)\n", sizes[bt],
                      tuned[bt]);
          doc["best_finetuned"] = sizes[bt];
        }
        std::printf("apparent-size suggestion (fixres suggest-resolution): %.1f\n",
                    suggestion.suggested);
        PlotOptions po;
        po.title = "Top-1 vs test resolution (" + s->split + ")";
        po.xLabel = "test resolution (px)";
        po.yLabel = "top-1 (%)";
        po.xUnit = "px";
        po.yUnit = "%";
        char suggested[48];
        std::snprintf(suggested, sizeof(suggested), "suggested %.1f", suggestion.suggested);
        po.marks = {{static_cast<double>(s->trainSize), "train " + std::to_string(s->trainSize),
                     "#555555", MarkStyle::kSolid},
                    {suggestion.suggested, suggested, "#2ca02c", MarkStyle::kDotted}};
        // highlightMax: the best resolution of each curve is ringed and labelled.
        std::vector<PlotSeries> series{{"no fine-tuning", xs, plain, "#1f77b4", true}};
        if (s->finetune) series.push_back({"FixRes fine-tuned", xs, tuned, "#d62728", true});
        writeFileAtomic(s->out + "/sweep.svg", lineChartSvg(series, po));
        writeFileAtomic(s->out + "/sweep.json", doc.dump(2) + "\n");
        std::printf("wrote %s/sweep.json and %s/sweep.svg\n", s->out.c_str(), s->out.c_str());
        return 0;
      }};
}

}  // namespace fixres::cli
