// `fixres sweep`: top-1 over a range of test resolutions, optionally after FixRes fine-tuning
// at each one; table, JSON and an SVG plot with the train resolution and the apparent-size
// suggestion marked.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/SvgPlot.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/Resolution.h"
#include "fixres/engine/Trainer.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::cli {

Command addSweepCommand(CLI::App& parent, GlobalOptions&) {
  auto* sub = parent.add_subcommand(
      "sweep",
      "Top-1 vs test resolution, with and without FixRes fine-tuning at each; table and plot");
  struct State {
    ModelFlags model;
    ClusterOptions cluster;
    std::string imnetPath, split = "holdout", sizes, out = "sweep";
    int trainSize = 224, workers = 4, finetuneEpochs = 1;
    int64_t finetuneIterations = -1;
    int64_t batch = 64;
    double finetuneLr = 1e-3;
    bool finetune = false, absoluteLr = false, cpu = false;
    uint64_t seed = 0;
  };
  auto s = std::make_shared<State>();
  sub->set_config("--config", "", "TOML/INI file with any of these options");
  addModelOptions(*sub, s->model);
  sub->add_option("--imnet-path", s->imnetPath, "Image folder root (train/ for fine-tuning)")
      ->required();
  sub->add_option("--split", s->split,
                  "Folder under --imnet-path to measure on (choose settings on a held-out split, "
                  "not the test set)")
      ->capture_default_str();
  sub->add_option("--train-size", s->trainSize, "The resolution the model was trained at")
      ->capture_default_str();
  sub->add_option("--sizes", s->sizes,
                  "Test resolutions, comma-separated (default: the multiples of the network's "
                  "stride from 0.6x to 1.8x the train size, and the train size)");
  sub->add_flag("--finetune", s->finetune,
                "Also fine-tune (classifier + last BN) at each resolution");
  sub->add_option("--finetune-epochs", s->finetuneEpochs, "Fine-tuning epochs per resolution")
      ->capture_default_str();
  sub->add_option("--finetune-iterations", s->finetuneIterations,
                  "Cap on iterations per fine-tuning epoch (-1: the whole train split)");
  sub->add_option("--finetune-lr", s->finetuneLr,
                  "Fine-tuning base learning rate (scaled as FixRes)")
      ->capture_default_str();
  sub->add_flag("--absolute-lr", s->absoluteLr, "Use --finetune-lr as is");
  sub->add_option("--batch", s->batch, "Batch per process")->capture_default_str();
  sub->add_option("--workers", s->workers, "Loader threads")->capture_default_str();
  sub->add_option("--seed", s->seed, "Seed")->capture_default_str();
  sub->add_option("--out", s->out, "Output folder: sweep.json, sweep.svg, fine-tuning runs")
      ->capture_default_str();
  sub->add_flag("--cpu", s->cpu, "CPU even when CUDA is available");
  addClusterOptions(*sub, s->cluster);
  return {sub, [s]() -> int {
            FIXRES_CHECK(!s->model.weightPath.empty(), UsageError, "sweep needs --weight-path");
            std::vector<int> sizes;
            if (s->sizes.empty()) {
              sizes = engine::sweepSizes(s->trainSize, models::outputStride(s->model.architecture));
            } else {
              sizes = parseSizes(s->sizes, "--sizes");
            }
            distributed::WorldInfo world;
            auto comm = connectWorld(s->cluster, world, !s->cpu && torch::cuda::is_available());
            auto device = deviceFor(world, s->cpu);
            auto dataset = data::openImageFolder(s->imnetPath + "/" + s->split);
            const int64_t classes = s->model.numClasses > 0
                                        ? s->model.numClasses
                                        : static_cast<int64_t>(dataset->classes().size());
            auto model = models::createModel(s->model.architecture, classes);
            models::loadWeightsFile(*model, s->model.weightPath, models::LoadOptions{});
            model->to(device);
            if (comm->rank() == 0) makeDirectories(s->out);
            auto suggestion = engine::suggestResolution(s->trainSize);
            nlohmann::json rows = nlohmann::json::array();
            std::vector<double> xs, plain, tuned;
            if (comm->rank() == 0)
              std::printf("%6s %10s %14s\n", "size", "top1", s->finetune ? "top1 finetuned" : "");
            for (int size : sizes) {
              engine::EvalOptions eo;
              eo.transform.kind = image::TransformKind::kVal;
              eo.transform.inputSize = size;
              eo.batch = s->batch;
              eo.workers = s->workers;
              eo.device = device;
              auto r = engine::evaluate(model, dataset, eo, *comm);
              nlohmann::json row = {
                  {"size", size}, {"top1", r.top1}, {"top5", r.top5}, {"loss", r.loss}};
              xs.push_back(size);
              plain.push_back(r.top1);
              double ft = -1;
              if (s->finetune) {
                engine::RunConfig c;
                c.mode = engine::RunMode::kFinetune;
                c.architecture = s->model.architecture;
                c.numClasses = classes;
                c.weightPath = s->model.weightPath;
                c.trainPath = s->imnetPath + "/train";
                c.valPath = s->imnetPath + "/" + s->split;
                c.inputSize = size;
                c.trainTransform = "val";
                c.sampler = "distributed";
                c.batch = static_cast<int>(s->batch);
                c.workers = s->workers;
                c.epochs = s->finetuneEpochs;
                c.iterationCap = s->finetuneIterations;
                c.learningRate = s->finetuneLr;
                c.absoluteLr = s->absoluteLr;
                c.seed = s->seed;
                c.logEvery = 1000000;
                c.runDir = s->out + "/finetune_" + std::to_string(size);
                engine::Trainer t(c, *comm, device);
                auto summary = t.run();
                ft = summary.after.top1;
                tuned.push_back(ft);
                row["top1_finetuned"] = ft;
                row["top5_finetuned"] = summary.after.top5;
                row["finetuned_weights"] = c.runDir + "/checkpoint.pth";
              }
              rows.push_back(row);
              if (comm->rank() == 0) {
                if (s->finetune)
                  std::printf("%6d %10.3f %14.3f\n", size, r.top1, ft);
                else
                  std::printf("%6d %10.3f\n", size, r.top1);
                std::fflush(stdout);
              }
            }
            if (comm->rank() != 0) return 0;
            auto bestOf = [&](const std::vector<double>& v) {
              size_t b = 0;
              for (size_t i = 1; i < v.size(); ++i)
                if (v[i] > v[b]) b = i;
              return b;
            };
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
            po.verticalMarks = {
                {static_cast<double>(s->trainSize), "train " + std::to_string(s->trainSize)},
                {suggestion.suggested, "suggested"}};
            std::vector<PlotSeries> series{{"no fine-tuning", xs, plain, "#1f77b4"}};
            if (s->finetune) series.push_back({"FixRes fine-tuned", xs, tuned, "#d62728"});
            writeFileAtomic(s->out + "/sweep.svg", lineChartSvg(series, po));
            writeFileAtomic(s->out + "/sweep.json", doc.dump(2) + "\n");
            std::printf("wrote %s/sweep.json and %s/sweep.svg\n", s->out.c_str(), s->out.c_str());
            return 0;
          }};
}

}  // namespace fixres::cli
