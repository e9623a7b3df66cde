// The resolution sweep: evaluations, speed, fine-tuning runs, the best sizes, the choice within a
// budget, sweep.json and the chosen model's config.json (the plots: SweepPlots.cpp).
#include "fixres/sweep/Sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/common/NumberText.h"
#include "fixres/data/Dataset.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/Resolution.h"
#include "fixres/step/StepBench.h"
#include "fixres/train/RunFolder.h"
#include "fixres/train/Trainer.h"

namespace fixres::engine {
namespace {

// `path` relative to `folder` when it lies inside it (as given, both under the same --out).
std::string inFolder(const std::string& folder, const std::string& path) {
  const auto rel = std::filesystem::path(path).lexically_relative(folder);
  return rel.empty() || *rel.begin() == ".." ? path : rel.string();
}

// The index of the largest of `top1(row)` over the rows (the first of equals).
template <typename Top1>
size_t bestSweepRow(const std::vector<SweepRow>& rows, Top1 top1) {
  size_t b = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (top1(rows[i]) > top1(rows[b])) b = i;
  return b;
}

// Rank 0 times the model's forward pass at `row.size` (the other ranks wait at a barrier, so
// that on a shared CPU nothing else runs meanwhile).
void measureSpeed(const SweepOptions& o, SweepRow& row, models::Model& model,
                  distributed::Communicator& comm, const RunDevice& run) {
  if (o.latencyBatches <= 0) return;
  if (comm.rank() == 0) {
    const int batch = o.timedBatch();
    auto x = torch::randn({batch, 3, row.size, row.size}, torch::TensorOptions().device(run.device))
                 .contiguous(run.numerics.channelsLast ? at::MemoryFormat::ChannelsLast
                                                       : at::MemoryFormat::Contiguous);
    const EvalTimings t = timeEvalBatches(model, x, /*warmup=*/2, o.latencyBatches, run);
    row.latencyMs = t.seconds * 1000.0 / o.latencyBatches;
    row.imagesPerS = static_cast<double>(batch) * o.latencyBatches / t.seconds;
  }
  comm.barrier();
}

// The model in each precision of the sweep, and the run device it runs on.
struct CellModel {
  RunDevice run;
  models::Model model{nullptr};
};

// The run device of each cell precision: --precisions resolved for the run's device and runtime
// (UsageError naming the flag and the precision where they lack it), else the run's own.
std::vector<RunDevice> precisionRuns(const SweepOptions& o, const RunDevice& run) {
  if (o.precisions.empty()) return {run};
  std::vector<RunDevice> runs;
  for (Precision p : o.precisions) {
    NumericsOptions n = o.numerics.options();
    n.precision = p == Precision::kBf16   ? PrecisionChoice::kBf16
                  : p == Precision::kFp16 ? PrecisionChoice::kFp16
                                          : PrecisionChoice::kFp32;
    try {
      runs.push_back({run.device, resolveNumerics(n, run.device)});
    } catch (const UsageError& e) {
      FIXRES_FAIL(UsageError, "--precisions ", precisionName(p), ": ", e.what());
    }
  }
  return runs;
}

// The cells at `size`, one per precision and crop fraction: the sweep's model in each precision
// evaluated at each crop and timed once (the crop does not change the model's work), then with
// finetune the size's fine-tuning run (one for every precision: it trains in the run's own), its
// weights evaluated in each precision at each crop (the run's own evaluation where the cell is
// what it evaluated: LibTorch, its precision, FixRes's crop). A stop signal ends it at the next
// batch or step: `stop` is set and the cells are incomplete.
std::vector<SweepRow> sweepCells(const SweepOptions& o, int size, std::vector<CellModel>& models,
                                 const std::shared_ptr<const data::Dataset>& dataset,
                                 const std::vector<SweepSetData>& sets,
                                 distributed::Communicator& comm, const RunDevice& run, int& stop) {
  std::vector<SweepRow> cells;
  const auto options = [&](double crop, const RunDevice& r) {
    EvalOptions e = evalOptions(o.eval, size, o.cell(size, crop), r);
    e.stopOnSignal = true;
    return e;
  };
  for (CellModel& m : models) {
    const size_t first = cells.size();
    for (double crop : o.cropPcts) {
      SweepRow row;
      row.size = size;
      row.cropPct = crop;
      row.precision = m.run.numerics.precision;
      const auto e = options(crop, m.run);
      row.plain = evaluate(m.model, dataset, e, comm);
      row.sets = scoreEvalSets(m.model, sets, e, comm);
      if ((stop = agreedStopSignal(comm)) != 0) return cells;
      if (cells.size() == first) measureSpeed(o, row, m.model, comm, m.run);
      row.imagesPerS = cells.size() == first ? row.imagesPerS : cells[first].imagesPerS;
      row.latencyMs = cells.size() == first ? row.latencyMs : cells[first].latencyMs;
      cells.push_back(row);
    }
  }
  if (!o.finetune) return cells;
  const RunConfig c = o.finetuneRun(size);
  const auto lock = lockRunFolder(c.runDir, comm);
  Trainer trainer(c, comm, run);
  const RunSummary summary = trainer.run();
  if ((stop = summary.stopSignal) != 0) return cells;
  const EvalResult tunedOwn = summary.after;  // LibTorch, the run's precision, FixRes's crop
  ModelSpec tuned = o.model;
  tuned.weightPath = c.runDir + "/checkpoint.pth";
  for (size_t i = 0; i < models.size(); ++i) {
    const RunDevice& r = models[i].run;
    std::optional<BuiltModel> built;
    for (size_t k = 0; k < o.cropPcts.size(); ++k) {
      SweepRow& row = cells[i * o.cropPcts.size() + k];
      row.finetunedWeights = tuned.weightPath;
      const bool own = row.cropPct == kFixresCropPct && r.numerics.runtime == Runtime::kLibTorch &&
                       r.numerics.precision == run.numerics.precision;
      if (own) row.finetuned = tunedOwn;
      if (own && sets.empty()) continue;
      if (!built)
        built = buildModel(resolvedFor(tuned, o.cell(size, row.cropPct)),
                           static_cast<int64_t>(dataset->classes().size()), r);
      const auto e = options(row.cropPct, r);
      if (!own) row.finetuned = evaluate(built->model, dataset, e, comm);
      row.setsFinetuned = scoreEvalSets(built->model, sets, e, comm);
      if ((stop = agreedStopSignal(comm)) != 0) return cells;
    }
  }
  return cells;
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
  overrides.trainSize = o.trainSize;
  ModelCard card = exportCard(spec, o.cell(row.size, row.cropPct), overrides);
  if (card.classNames.empty() && static_cast<int64_t>(classes.size()) == spec.numClasses)
    card.classNames = classes;
  auto j = timmHubConfig(card, *model);
  j["fixres"]["weights"] = "";  // placed by writeSweep
  // What predict, eval and extract run the folder's model in when not told (ModelCard.h).
  j["fixres"]["runtime"] = r.runtime;
  j["fixres"]["precision"] = precisionName(row.precision);
  nlohmann::ordered_json choice;
  choice["size"] = row.size;
  choice["crop_pct"] = row.cropPct;
  choice["precision"] = precisionName(row.precision);
  choice["finetuned"] = o.finetune;
  choice["top1"] = decidingTop1(row, o.finetune);
  choice["split"] = o.split;
  if (std::isfinite(row.imagesPerS)) {
    choice["images_per_s"] = row.imagesPerS;
    choice["latency_ms"] = row.latencyMs;
    choice["latency_batch"] = o.timedBatch();
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
    if (!r.shiftOk) continue;
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

namespace {

// The items of a comma-separated list given to `flag`, each read by `read` (trimmed: "a, b" and
// "a ,b" alike), none twice; UsageError naming the flag otherwise.
template <typename T, typename Read>
std::vector<T> parseList(const std::string& text, const char* flag, const char* what, Read read) {
  std::vector<T> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trimmed(item);
    const T v = read(item);
    FIXRES_CHECK(std::find(out.begin(), out.end(), v) == out.end(), UsageError, flag, " lists ",
                 item, " twice");
    out.push_back(v);
  }
  FIXRES_CHECK(!out.empty() && text.back() != ',', UsageError, flag,
               " must be a comma-separated list of ", what, ", got '", text, "'");
  return out;
}

}  // namespace

std::vector<double> parseCropList(const std::string& text) {
  return parseList<double>(text, "--crop-pcts", "fractions", [](const std::string& item) {
    size_t used = 0;
    double v = NAN;
    try {
      v = std::stod(item, &used);
    } catch (const std::logic_error&) {
    }
    FIXRES_CHECK(used == item.size() && kCropFractions.contains(v), UsageError,
                 "--crop-pcts values must be ", kCropFractions.describe(), ", got '", item, "'");
    return v;
  });
}

std::vector<Precision> parsePrecisionList(const std::string& text) {
  return parseList<Precision>(text, "--precisions", "precisions", [](const std::string& item) {
    const PrecisionChoice c = parseChoice(numericsChoices().precision, item, "--precisions");
    FIXRES_CHECK(c != PrecisionChoice::kAuto, UsageError,
                 "--precisions names precisions (fp32, bf16, fp16), not auto");
    return c == PrecisionChoice::kBf16   ? Precision::kBf16
           : c == PrecisionChoice::kFp16 ? Precision::kFp16
                                         : Precision::kFp32;
  });
}

Preprocessing SweepOptions::cell(int size, double cropPct) const {
  Preprocessing p = model.preprocessing();
  p.sizes = {size};
  p.cropPct = cropPct;
  p.resizeMode = resizeMode;
  return p;
}

RunConfig SweepOptions::finetuneRun(int size) const {
  auto c = RunConfig::forMode(RunMode::kFinetune);
  c.model = model;
  c.trainPath = imnetPath + "/train";
  c.valPath = imnetPath + "/" + split;
  c.inputSize = size;
  c.resizeMode = resizeMode;
  c.batch = static_cast<int>(eval.batch);
  c.workers = eval.workers;
  c.testFlip = eval.testFlip;
  c.skipBadImages = eval.skipBadImages;
  c.numerics = numerics.options();
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
  FIXRES_CHECK(!sizes.empty(), UsageError, "--sizes is empty");
  FIXRES_CHECK(!numerics.precision || precisions.empty(), UsageError,
               "--precision and --precisions: give one (--precisions fp32,bf16 sweeps both)");
  FIXRES_CHECK(maxShiftLoss == 0 || !evalSets.empty(), UsageError,
               "--max-shift-loss needs an --eval-set to measure the loss on");
  FIXRES_CHECK(maxShiftLoss == 0 || std::count(sizes.begin(), sizes.end(), trainSize) > 0,
               UsageError, "--max-shift-loss compares with the train size (", trainSize,
               " px, --train-size): it must be among --sizes");
  FIXRES_CHECK(latencyBatches > 0 || (maxLatencyMs == 0 && minThroughput == 0), UsageError,
               "--max-latency-ms and --min-throughput need the speed measured: "
               "--latency-batches must be at least 1");
  model.forSizes({trainSize}, "--train-size");
  model.forSizes(sizes, "--sizes");
  // A dynamic embedding evaluates any size (its grid truncated, as timm's), but the folder a sweep
  // writes and each fine-tuning run are built at one size, which must be on the patch grid.
  const models::ArchInfo a = model.info();
  for (int size : sizes)
    FIXRES_CHECK(size % a.sizeMultiple == 0, UsageError, "--sizes ", size, ": ", a.name,
                 " takes images whose sides are multiples of its patch size ", a.sizeMultiple,
                 " px");
  if (finetune)
    for (int size : sizes) finetuneRun(size).validate();
  // Data with train/ and val/ only has no held-out split yet: say how to make one.
  std::error_code ec;
  const std::string splitPath = imnetPath + "/" + split;
  FIXRES_CHECK(imnetPath.empty() || std::filesystem::exists(splitPath, ec), DataError, "dataset ",
               splitPath,
               " does not exist: choose on images the model was not trained on, carved from "
               "train/ before training by 'fixres holdout --imnet-path ",
               imnetPath, "' (docs/resolution.md), or name another folder with --split");
  checkLatencyMemory(*this);
  checkSweepFolder(*this);
}

SweepResult runSweep(const SweepOptions& o, distributed::Communicator& comm, const RunDevice& run,
                     std::optional<FolderLock>& lock,
                     const std::function<void(const SweepRow&)>& onRow) {
  const std::vector<RunDevice> runs = precisionRuns(o, run);
  std::shared_ptr<const data::Dataset> dataset = data::openDataset(o.imnetPath + "/" + o.split);
  if (o.finetune) data::openDataset(o.imnetPath + "/train");
  std::vector<SweepSetData> sets;
  for (const EvalSetSpec& spec : o.evalSets) {
    try {
      sets.push_back({spec, data::openDataset(spec.path)});
    } catch (const Error& e) {
      throw Error(e.code(), "--eval-set " + spec.name + "=" + spec.path + ": " + e.what());
    }
    FIXRES_CHECK(sets.back().dataset->classes() == dataset->classes(), UsageError, "--eval-set ",
                 spec.name, ": ", spec.path, " has ", sets.back().dataset->classes().size(),
                 " classes other than the ", dataset->classes().size(), " of ", o.imnetPath, "/",
                 o.split, " (the same class folder names are needed)");
  }
  // Every input is open: the folder is made and held for this sweep alone (two sweeps into one
  // folder would lose one's rows).
  if (auto held = lockRunFolder(o.out, comm)) lock.emplace(std::move(*held));
  // One set of weights at every size: the position embedding (transformers) follows each input.
  ResolvedModel resolved = resolvedForSizes(o.model, {o.trainSize});
  resolved.spec.dynamicImgSize = true;
  std::vector<CellModel> models;
  SweepResult result;
  for (const RunDevice& r : runs) {
    models.push_back(
        {r, buildModel(resolved, static_cast<int64_t>(dataset->classes().size()), r).model});
    result.precisions.push_back(r.numerics.precision);
  }
  result.runtime = runtimeName(run.numerics.runtime);
  result.suggested = suggestResolution(o.trainSize).suggested;
  for (int size : o.sizes) {
    for (SweepRow& row : sweepCells(o, size, models, dataset, sets, comm, run, result.stopSignal)) {
      result.rows.push_back(row);
      if (onRow) onRow(result.rows.back());
    }
    if (result.stopSignal != 0) return result;
  }
  result.bestPlain = bestSweepRow(result.rows, [](const SweepRow& r) { return r.plain.top1; });
  if (o.finetune)
    result.bestFinetuned =
        bestSweepRow(result.rows, [](const SweepRow& r) { return r.finetuned.top1; });
  markParetoFront(result.rows, o.finetune);
  for (size_t i = 0; i < result.rows.size() && !sets.empty(); ++i)
    if (result.rows[i].size == o.trainSize && result.rows[i].cropPct == o.cropPcts.front() &&
        result.rows[i].precision == result.precisions.front())
      result.shiftBaseline = i;
  if (result.shiftBaseline) markShiftRule(result.rows, *result.shiftBaseline, o);
  result.chosen = chooseWithinBudget(result.rows, o.finetune, o.maxLatencyMs, o.minThroughput);
  if (result.chosen && comm.rank() == 0) {
    const SweepRow& row = result.rows[*result.chosen];
    result.chosenSource = o.finetune ? row.finetunedWeights : localWeightFile(o.model);
    if (o.model.useEma && !o.finetune)
      log::warn("sweep: ", o.out,
                "/config.json not written: the sweep evaluated --use-ema weights, which a model "
                "folder does not select (export them first: fixres export --use-ema)");
    else
      result.modelConfig = chosenModelConfig(o, result, models.front().model, dataset->classes());
  }
  return result;
}

nlohmann::json sweepJson(const SweepOptions& o, const SweepResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepRow& r : result.rows) {
    nlohmann::json row = {
        {"size", r.size},       {"crop_pct", r.cropPct}, {"precision", precisionName(r.precision)},
        {"top1", r.plain.top1}, {"top5", r.plain.top5},  {"loss", r.plain.loss}};
    if (o.finetune) {
      row["top1_finetuned"] = r.finetuned.top1;
      row["top5_finetuned"] = r.finetuned.top5;
      row["finetuned_weights"] = inFolder(o.out, r.finetunedWeights);
    }
    if (!o.evalSets.empty()) row["sets"] = evalSetsJson(o, result, r);
    if (o.maxShiftLoss > 0) row["shift_ok"] = r.shiftOk;
    if (std::isfinite(r.imagesPerS)) {
      row["images_per_s"] = r.imagesPerS;
      row["latency_ms"] = r.latencyMs;
      row["pareto"] = r.pareto;
    }
    rows.push_back(row);
  }
  std::vector<std::string> precisionNames;
  for (Precision p : result.precisions) precisionNames.push_back(precisionName(p));
  nlohmann::json doc = {
      {"train_size", o.trainSize},
      {"split", o.split},
      {"suggested_size", result.suggested},
      {"rows", rows},
      {"crop_pcts", o.cropPcts},
      {"best_plain", result.rows[result.bestPlain].size},
      {"best_plain_crop_pct", result.rows[result.bestPlain].cropPct},
      {"best_plain_precision", precisionName(result.rows[result.bestPlain].precision)},
      {"runtime", result.runtime},
      {"precisions", precisionNames}};
  if (result.precisions.size() == 1) doc["precision"] = precisionNames.front();
  if (o.finetune) {
    doc["best_finetuned"] = result.rows[result.bestFinetuned].size;
    doc["best_finetuned_crop_pct"] = result.rows[result.bestFinetuned].cropPct;
    doc["best_finetuned_precision"] = precisionName(result.rows[result.bestFinetuned].precision);
  }
  if (o.latencyBatches > 0) {
    doc["speed"] = {
        {"latency_batch", o.timedBatch()},
        {"timed_batches", o.latencyBatches},
        {"threads", torch::get_num_threads()},
        {"what", "forward pass of the model alone, rank 0, the run's device and numerics"}};
  }
  if (!o.evalSets.empty()) {
    nlohmann::json sets = nlohmann::json::array();
    for (const EvalSetSpec& e : o.evalSets) sets.push_back({{"name", e.name}, {"path", e.path}});
    doc["eval_sets"] = sets;
    doc["shift_baseline"] = result.shiftBaseline
                                ? nlohmann::json{{"size", result.rows[*result.shiftBaseline].size},
                                                 {"crop_pct", o.cropPcts.front()},
                                                 {"precision", precisionNames.front()}}
                                : nlohmann::json();
  }
  nlohmann::json budget = nlohmann::json::object();
  if (o.maxShiftLoss > 0) budget["max_shift_loss"] = o.maxShiftLoss;
  if (o.maxLatencyMs > 0) budget["max_latency_ms"] = o.maxLatencyMs;
  if (o.minThroughput > 0) budget["min_throughput"] = o.minThroughput;
  doc["budget"] = budget;
  doc["chosen"] =
      result.chosen ? nlohmann::json(result.rows[*result.chosen].size) : nlohmann::json();
  if (result.chosen) {
    doc["chosen_crop_pct"] = result.rows[*result.chosen].cropPct;
    doc["chosen_precision"] = precisionName(result.rows[*result.chosen].precision);
    doc["chosen_weights"] = result.chosenWeights;  // relative to the sweep folder
  }
  return doc;
}

void writeSweep(const SweepOptions& o, SweepResult& result) {
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
  writeFileAtomic(o.out + "/sweep_grid.svg", sweepGridSvg(o, result));
  writeOrRemove("sweep_speed.svg", o.latencyBatches > 0, [&] { return sweepSpeedSvg(o, result); });
  if (!result.modelConfig.empty()) {
    // The weights inside the folder before the card that names them.
    result.chosenWeights = placeChosenWeights(o.out, result.chosenSource);
    result.modelConfig["fixres"]["weights"] = result.chosenWeights;
  } else if (result.chosen) {  // no model folder (--use-ema weights): sweep.json names the source
    result.chosenWeights = inFolder(o.out, result.chosenSource);
  }
  writeOrRemove("config.json", !result.modelConfig.empty(),
                [&] { return jsonText(result.modelConfig, 2) + "\n"; });
  writeFileAtomic(o.out + "/sweep.json", jsonText(roundedNumbers(sweepJson(o, result)), 2) + "\n");
}

}  // namespace fixres::engine
