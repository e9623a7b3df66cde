// The resolution sweep: evaluations, speed, fine-tuning runs, the best sizes, the choice within a
// budget, sweep.json, the plots and the chosen model's config.json.
#include "fixres/engine/Sweep.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/SvgPlot.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/Resolution.h"
#include "fixres/engine/RunFolder.h"
#include "fixres/engine/StepBench.h"
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

int latencyBatchOf(const SweepOptions& o) {
  return o.latencyBatch > 0 ? o.latencyBatch : static_cast<int>(o.eval.batch);
}

// Rank 0 times the model's forward pass at `row.size` (the other ranks wait at a barrier, so
// that on a shared CPU nothing else runs meanwhile).
void measureSpeed(const SweepOptions& o, SweepRow& row, models::Model& model,
                  distributed::Communicator& comm, const RunDevice& run) {
  if (o.latencyBatches <= 0) return;
  if (comm.rank() == 0) {
    const int batch = latencyBatchOf(o);
    auto x = torch::randn({batch, 3, row.size, row.size}, torch::TensorOptions().device(run.device))
                 .contiguous(run.numerics.channelsLast ? at::MemoryFormat::ChannelsLast
                                                       : at::MemoryFormat::Contiguous);
    const EvalTimings t = timeEvalBatches(model, x, /*warmup=*/2, o.latencyBatches, run);
    row.latencyMs = t.seconds * 1000.0 / o.latencyBatches;
    row.imagesPerS = static_cast<double>(batch) * o.latencyBatches / t.seconds;
  }
  comm.barrier();
}

// The row at `size`: the sweep's model evaluated and timed, then with finetune the fine-tuning
// run there.
SweepRow sweepRow(const SweepOptions& o, int size, models::Model& model,
                  const std::shared_ptr<const data::Dataset>& dataset,
                  distributed::Communicator& comm, const RunDevice& run) {
  SweepRow row;
  row.size = size;
  row.plain =
      evaluate(model, dataset, evalOptions(o.eval, size, o.model.preprocessing(), run), comm);
  measureSpeed(o, row, model, comm, run);
  if (!o.finetune) return row;
  const RunConfig c = o.finetuneRun(size);
  const auto lock = lockRunFolder(c.runDir, comm);
  Trainer trainer(c, comm, run);
  row.finetuned = trainer.run().after;
  row.finetunedWeights = c.runDir + "/checkpoint.pth";
  return row;
}

// The chosen model as a model folder's config.json: its card at the chosen size in timm's hub
// layout, with fixres.weights naming the weight file and fixres.sweep the choice.
nlohmann::ordered_json chosenModelConfig(const SweepOptions& o, const SweepResult& r,
                                         models::Model& model,
                                         const std::vector<std::string>& classes) {
  const SweepRow& row = r.rows[*r.chosen];
  ModelSpec spec = o.model;
  if (spec.numClasses == 0) spec.numClasses = static_cast<int64_t>(classes.size());
  CardOverrides overrides;
  overrides.testSize = row.size;
  overrides.resizeMode = o.eval.resizeMode;
  ModelCard card = exportCard(spec, overrides);
  if (card.classNames.empty() && static_cast<int64_t>(classes.size()) == spec.numClasses)
    card.classNames = classes;
  auto j = timmHubConfig(card, *model);
  j["fixres"]["weights"] = r.chosenWeights;
  nlohmann::ordered_json choice;
  choice["size"] = row.size;
  choice["finetuned"] = o.finetune;
  choice["top1"] = decidingTop1(row, o.finetune);
  choice["split"] = o.split;
  if (std::isfinite(row.imagesPerS)) {
    choice["images_per_s"] = row.imagesPerS;
    choice["latency_ms"] = row.latencyMs;
    choice["latency_batch"] = latencyBatchOf(o);
  }
  if (o.maxLatencyMs > 0) choice["max_latency_ms"] = o.maxLatencyMs;
  if (o.minThroughput > 0) choice["min_throughput"] = o.minThroughput;
  j["fixres"]["sweep"] = choice;
  return j;
}

}  // namespace

void markParetoFront(std::vector<SweepRow>& rows, bool finetune) {
  for (SweepRow& a : rows) {
    a.pareto = std::isfinite(a.imagesPerS);
    if (!a.pareto) continue;
    const double ta = decidingTop1(a, finetune);
    for (const SweepRow& b : rows) {
      if (&a == &b || !std::isfinite(b.imagesPerS)) continue;
      const double tb = decidingTop1(b, finetune);
      if (b.imagesPerS >= a.imagesPerS && tb >= ta && (b.imagesPerS > a.imagesPerS || tb > ta)) {
        a.pareto = false;
        break;
      }
    }
  }
}

std::optional<size_t> chooseWithinBudget(const std::vector<SweepRow>& rows, bool finetune,
                                         double maxLatencyMs, double minThroughput) {
  std::optional<size_t> best;
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    if (maxLatencyMs > 0 && !(r.latencyMs <= maxLatencyMs)) continue;  // NaN never qualifies
    if (minThroughput > 0 && !(r.imagesPerS >= minThroughput)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const SweepRow& b = rows[*best];
    const double tr = decidingTop1(r, finetune), tb = decidingTop1(b, finetune);
    if (tr > tb || (tr == tb && r.imagesPerS > b.imagesPerS)) best = i;
  }
  return best;
}

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
  // One set of weights at every size: the position embedding (transformers) follows each input.
  ResolvedModel resolved = resolvedForSizes(o.model, {o.trainSize});
  resolved.spec.dynamicImgSize = true;
  auto model = buildModel(resolved, static_cast<int64_t>(dataset->classes().size()), run).model;
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
  markParetoFront(result.rows, o.finetune);
  result.chosen = chooseWithinBudget(result.rows, o.finetune, o.maxLatencyMs, o.minThroughput);
  if (result.chosen && comm.rank() == 0) {
    const SweepRow& row = result.rows[*result.chosen];
    result.chosenWeights =
        std::filesystem::absolute(o.finetune ? row.finetunedWeights : localWeightFile(o.model))
            .lexically_normal()
            .string();
    if (o.model.useEma && !o.finetune)
      log::warn("sweep: ", o.out,
                "/config.json not written: the sweep evaluated --use-ema weights, which a model "
                "folder does not select (export them first: fixres export --use-ema)");
    else
      result.modelConfig = chosenModelConfig(o, result, model, dataset->classes());
  }
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
    if (std::isfinite(r.imagesPerS)) {
      row["images_per_s"] = r.imagesPerS;
      row["latency_ms"] = r.latencyMs;
      row["pareto"] = r.pareto;
    }
    rows.push_back(row);
  }
  nlohmann::json doc = {{"train_size", o.trainSize},
                        {"split", o.split},
                        {"suggested_size", result.suggested},
                        {"rows", rows},
                        {"best_plain", result.rows[result.bestPlain].size}};
  if (o.finetune) doc["best_finetuned"] = result.rows[result.bestFinetuned].size;
  if (o.latencyBatches > 0) {
    doc["speed"] = {
        {"latency_batch", latencyBatchOf(o)},
        {"timed_batches", o.latencyBatches},
        {"threads", torch::get_num_threads()},
        {"what", "forward pass of the model alone, rank 0, the run's device and numerics"}};
  }
  nlohmann::json budget = nlohmann::json::object();
  if (o.maxLatencyMs > 0) budget["max_latency_ms"] = o.maxLatencyMs;
  if (o.minThroughput > 0) budget["min_throughput"] = o.minThroughput;
  doc["budget"] = budget;
  doc["chosen"] =
      result.chosen ? nlohmann::json(result.rows[*result.chosen].size) : nlohmann::json();
  if (result.chosen) doc["chosen_weights"] = result.chosenWeights;
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

std::string sweepSpeedSvg(const SweepOptions& o, const SweepResult& result) {
  std::vector<double> xs, ys, fx, fy;
  for (const SweepRow& r : result.rows) {
    xs.push_back(r.imagesPerS);
    ys.push_back(decidingTop1(r, o.finetune));
  }
  std::vector<const SweepRow*> front;
  for (const SweepRow& r : result.rows)
    if (r.pareto) front.push_back(&r);
  std::sort(front.begin(), front.end(),
            [](const SweepRow* a, const SweepRow* b) { return a->imagesPerS < b->imagesPerS; });
  for (const SweepRow* r : front) {
    fx.push_back(r->imagesPerS);
    fy.push_back(decidingTop1(*r, o.finetune));
  }
  PlotOptions po;
  po.title = std::string("Top-1") + (o.finetune ? " (fine-tuned)" : "") + " vs images/s, batch " +
             std::to_string(latencyBatchOf(o)) + " (" + o.split + ")";
  po.xLabel = "images per second (model forward pass)";
  po.yLabel = "top-1 (%)";
  po.xUnit = "img/s";
  po.yUnit = "%";
  // The budget as a line at its images per second, when it falls on the chart (up to 1.25x the
  // fastest size); one far off it would squash the sizes into a corner, so the title says it.
  double fastest = 0;
  for (double x : xs)
    if (std::isfinite(x)) fastest = std::max(fastest, x);
  if (fastest > 0) {  // from 0, so that the gaps between sizes read as ratios
    po.xMin = 0;
    po.xMax = 1.3 * fastest;
  }
  char label[96];
  const auto budgetMark = [&](double x, const char* text) {
    if (x <= 1.25 * fastest) {
      po.marks.push_back({x, text, "#555555", MarkStyle::kSolid});
    } else {
      po.title += std::string("; ") + text + " is off the chart";
    }
  };
  if (o.minThroughput > 0) {
    std::snprintf(label, sizeof(label), "min %.4g img/s", o.minThroughput);
    budgetMark(o.minThroughput, label);
  }
  if (o.maxLatencyMs > 0) {
    std::snprintf(label, sizeof(label), "max %.4g ms/batch", o.maxLatencyMs);
    budgetMark(latencyBatchOf(o) * 1000.0 / o.maxLatencyMs, label);
  }
  if (result.chosen) {
    const SweepRow& c = result.rows[*result.chosen];
    std::snprintf(label, sizeof(label), "chosen %d px", c.size);
    po.marks.push_back({c.imagesPerS, label, "#2ca02c", MarkStyle::kDotted});
  }
  std::vector<PlotSeries> series{{"sizes", xs, ys, "#1f77b4", false},
                                 {"Pareto front", fx, fy, "#d62728", false}};
  return lineChartSvg(series, po);
}

void writeSweep(const SweepOptions& o, const SweepResult& result) {
  // A file this sweep does not write is removed, so that a folder reused by a sweep that chose
  // nothing (or timed nothing) holds no earlier sweep's choice.
  const auto writeOrRemove = [&](const std::string& name, bool write, const auto& text) {
    std::error_code ignored;
    if (write)
      writeFileAtomic(o.out + "/" + name, text());
    else
      std::filesystem::remove(o.out + "/" + name, ignored);
  };
  writeFileAtomic(o.out + "/sweep.svg", sweepSvg(o, result));
  writeOrRemove("sweep_speed.svg", o.latencyBatches > 0, [&] { return sweepSpeedSvg(o, result); });
  writeOrRemove("config.json", !result.modelConfig.empty(),
                [&] { return result.modelConfig.dump(2) + "\n"; });
  writeFileAtomic(o.out + "/sweep.json", sweepJson(o, result).dump(2) + "\n");
}

}  // namespace fixres::engine
