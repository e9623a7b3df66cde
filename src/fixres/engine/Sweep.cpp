// The resolution sweep: evaluations, fine-tuning runs, the best sizes, sweep.json and sweep.svg.
#include "fixres/engine/Sweep.h"

#include <cstdio>

#include "fixres/common/Files.h"
#include "fixres/common/SvgPlot.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/Resolution.h"
#include "fixres/engine/RunFolder.h"
#include "fixres/engine/Trainer.h"

namespace fixres::engine {
namespace {

// The index of the largest of `top1(row)` over the rows (the first of equals).
template <typename Top1>
size_t bestSweepRow(const std::vector<SweepRow>& rows, Top1 top1) {
  size_t b = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (top1(rows[i]) > top1(rows[b])) b = i;
  return b;
}

// The row at `size`: the sweep's model evaluated, then with finetune the fine-tuning run there.
SweepRow sweepRow(const SweepOptions& o, int size, models::Model& model,
                  const std::shared_ptr<const data::Dataset>& dataset,
                  distributed::Communicator& comm, const RunDevice& run) {
  SweepRow row;
  row.size = size;
  row.plain =
      evaluate(model, dataset, evalOptions(o.eval, size, o.model.preprocessing(), run), comm);
  if (!o.finetune) return row;
  const RunConfig c = o.finetuneRun(size);
  const auto lock = lockRunFolder(c.runDir, comm);
  Trainer trainer(c, comm, run);
  row.finetuned = trainer.run().after;
  row.finetunedWeights = c.runDir + "/checkpoint.pth";
  return row;
}

}  // namespace

RunConfig SweepOptions::finetuneRun(int size) const {
  auto c = RunConfig::forMode(RunMode::kFinetune);
  c.model = model;
  c.trainPath = imnetPath + "/train";
  c.valPath = imnetPath + "/" + split;
  c.inputSize = size;
  c.resizeMode = eval.resizeMode;
  c.batch = static_cast<int>(eval.batch);
  c.workers = eval.workers;
  c.testFlip = eval.testFlip;
  c.numerics = numerics;
  c.epochs = finetuneEpochs;
  c.iterationCap = finetuneIterations;
  c.learningRate = finetuneLr;
  c.absoluteLr = absoluteLr;
  c.seed = seed;
  c.logEvery = 1000000;
  c.runDir = out + "/finetune_" + std::to_string(size);
  return c;
}

void SweepOptions::validate() const {
  if (finetune) finetuneRun(sizes.front()).validate();
}

SweepResult runSweep(const SweepOptions& o, distributed::Communicator& comm, const RunDevice& run,
                     const std::function<void(const SweepRow&)>& onRow) {
  std::shared_ptr<const data::Dataset> dataset = data::openDataset(o.imnetPath + "/" + o.split);
  if (o.finetune) data::openDataset(o.imnetPath + "/train");
  auto model = buildModel(o.model, static_cast<int64_t>(dataset->classes().size()), run).model;
  if (comm.rank() == 0) makeDirectories(o.out);
  SweepResult result;
  result.suggested = suggestResolution(o.trainSize).suggested;
  for (int size : o.sizes) {
    result.rows.push_back(sweepRow(o, size, model, dataset, comm, run));
    if (onRow) onRow(result.rows.back());
  }
  result.bestPlain = bestSweepRow(result.rows, [](const SweepRow& r) { return r.plain.top1; });
  if (o.finetune)
    result.bestFinetuned =
        bestSweepRow(result.rows, [](const SweepRow& r) { return r.finetuned.top1; });
  return result;
}

nlohmann::json sweepJson(const SweepOptions& o, const SweepResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepRow& r : result.rows) {
    nlohmann::json row = {
        {"size", r.size}, {"top1", r.plain.top1}, {"top5", r.plain.top5}, {"loss", r.plain.loss}};
    if (o.finetune) {
      row["top1_finetuned"] = r.finetuned.top1;
      row["top5_finetuned"] = r.finetuned.top5;
      row["finetuned_weights"] = r.finetunedWeights;
    }
    rows.push_back(row);
  }
  nlohmann::json doc = {{"train_size", o.trainSize},
                        {"split", o.split},
                        {"suggested_size", result.suggested},
                        {"rows", rows},
                        {"best_plain", result.rows[result.bestPlain].size}};
  if (o.finetune) doc["best_finetuned"] = result.rows[result.bestFinetuned].size;
  return doc;
}

std::string sweepSvg(const SweepOptions& o, const SweepResult& result) {
  std::vector<double> xs, plain, tuned;
  for (const SweepRow& r : result.rows) {
    xs.push_back(r.size);
    plain.push_back(r.plain.top1);
    tuned.push_back(r.finetuned.top1);
  }
  PlotOptions po;
  po.title = "Top-1 vs test resolution (" + o.split + ")";
  po.xLabel = "test resolution (px)";
  po.yLabel = "top-1 (%)";
  po.xUnit = "px";
  po.yUnit = "%";
  char suggested[48];
  std::snprintf(suggested, sizeof(suggested), "suggested %.1f", result.suggested);
  po.marks = {{static_cast<double>(o.trainSize), "train " + std::to_string(o.trainSize), "#555555",
               MarkStyle::kSolid},
              {result.suggested, suggested, "#2ca02c", MarkStyle::kDotted}};
  // highlightMax: the best resolution of each curve is ringed and labelled.
  std::vector<PlotSeries> series{{"no fine-tuning", xs, plain, "#1f77b4", true}};
  if (o.finetune) series.push_back({"FixRes fine-tuned", xs, tuned, "#d62728", true});
  return lineChartSvg(series, po);
}

void writeSweep(const SweepOptions& o, const SweepResult& result) {
  writeFileAtomic(o.out + "/sweep.svg", sweepSvg(o, result));
  writeFileAtomic(o.out + "/sweep.json", sweepJson(o, result).dump(2) + "\n");
}

}  // namespace fixres::engine
