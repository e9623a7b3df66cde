// The resolution sweep of `fixres sweep`: top-1 at each test resolution, optionally after FixRes
// fine-tuning at each one (a `fixres finetune` run with the sweep's model, evaluation settings and
// numerics), the speed of the model at each resolution (images per second and milliseconds per
// batch), the best resolutions, the resolution chosen within a latency or throughput budget, and
// sweep.json, sweep.svg (the train resolution, the apparent-size suggestion and the best
// resolutions marked), sweep_speed.svg (top-1 against images per second with the Pareto front)
// and config.json (the chosen model as a model folder: ModelCard.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/FolderLock.h"
#include "fixres/common/Setting.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelResolution.h"
#include "fixres/engine/ModelSpec.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/runtime/Numerics.h"

namespace fixres::engine {

// A further evaluation set (`--eval-set NAME=PATH`): an image folder with the split's classes,
// shifted data say, scored at every cell beside the split that chooses.
struct EvalSetSpec {
  std::string name, path;
};

// "NAME=PATH" entries: names of 1-64 letters, digits, '_', '-' or '.', each once; UsageError
// naming --eval-set and the entry otherwise.
std::vector<EvalSetSpec> parseEvalSets(const std::vector<std::string>& entries);
// "0.875,1.0": fractions in kCropFractions; UsageError naming --crop-pcts otherwise.
std::vector<double> parseCropList(const std::string& text);
// "fp32,bf16": precisions named once each (fp32, bf16, fp16); UsageError naming --precisions
// otherwise (whether the device and runtime have them is resolveNumerics's check).
std::vector<Precision> parsePrecisionList(const std::string& text);

// The syntaxes of sweep's list rows: --eval-set (repeatable), --crop-pcts, --precisions.
inline constexpr ListSyntax<EvalSetSpec> kEvalSetSyntax{
    [](const std::vector<std::string>& given, const std::string&) { return parseEvalSets(given); },
    /*repeatable=*/true};
inline constexpr ListSyntax<double> kCropListSyntax{
    [](const std::vector<std::string>& given, const std::string&) {
      return parseCropList(given.back());
    }};
inline constexpr ListSyntax<Precision> kPrecisionListSyntax{
    [](const std::vector<std::string>& given, const std::string&) {
      return parsePrecisionList(given.back());
    }};

struct SweepOptions {
  ModelSpec model;  // with its weights (weightPath)
  EvalSettings eval;
  // The fine-tuning runs' numerics as given (the evaluations use the RunDevice's).
  NumericsRequest numerics;
  std::string imnetPath;  // holds `split` and, for fine-tuning, train/
  std::string split = "holdout";
  // The test resolutions, in order (--sizes; empty: the default sizes around the train size).
  std::vector<int> sizes;
  // The test crop fractions, in order (at least one): every size is scored at each (a cell).
  // A size's fine-tuning run is shared by its cells: it fits the classifier and BatchNorm at the
  // size with the train transform, which no crop fraction enters; its weights are then scored
  // at each crop.
  std::vector<double> cropPcts{kFixresCropPct};
  image::ResizeMode resizeMode = image::ResizeMode::kFixres;  // every cell's resize rule
  int trainSize = 224;
  bool finetune = false;
  int finetuneEpochs = 1;
  int64_t finetuneIterations = -1;  // cap per epoch (-1: the whole train split)
  double finetuneLr = 1e-3;         // the base rate, scaled as FixRes unless absoluteLr
  bool absoluteLr = false;
  uint64_t seed = 0;
  std::string out = "sweep";  // sweep.json, sweep.svg and finetune_<size>/ go here
  // Speed: rank 0 times `latencyBatches` forward passes of a batch of `latencyBatch` random
  // images at each size (after 2 untimed ones), on the run's device, threads and numerics.
  int latencyBatch = 0;    // 0: eval.batch
  int latencyBatches = 5;  // 0: speed not measured
  // The budget (0: none): the chosen size has the best top-1 among those whose batch takes at
  // most maxLatencyMs and that reach minThroughput images per second.
  double maxLatencyMs = 0;
  double minThroughput = 0;
  // Further sets scored at every cell (top-1 and ECE); the split still chooses. With
  // maxShiftLoss > 0 only cells whose deciding top-1 on every set is at most that many points
  // below the baseline cell's (the train size at the first crop fraction) may be chosen.
  std::vector<EvalSetSpec> evalSets;
  double maxShiftLoss = 0;
  // The precisions every cell runs in, in order (--precisions; empty: --precision's, resolved for
  // the run's device): a third axis, each in the run's runtime (LibTorch's autocast, OpenVINO's
  // inference precision). Fine-tuning runs are shared by a size's precisions.
  std::vector<Precision> precisions;

  // sweep's own flags, one row each (common/Setting.h).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    v(Setting{"",
              "--split",
              "Sweep",
              "Folder under --imnet-path to measure on (choose settings on a held-out split, not "
              "the test set)",
              {},
              kInvocation,
              "sweep"},
      o.split);
    v(kResizeModeRow.offeredOnlyTo("sweep"), o.resizeMode, image::resizeModes());
    v(Setting{"", "--sizes", "Sweep",
              "Test resolutions, comma-separated (default: the multiples of the network's stride "
              "from 0.6x to 1.8x the train size, and the train size)",
              kImageSizes, kInvocation, "sweep"},
      o.sizes, kSizeListSyntax);
    v(Setting{"",
              "--crop-pcts",
              "Sweep",
              "Test crop fractions, comma-separated (each in [0.05, 1], as --crop-pct): every "
              "size is scored at each, fine-tuned once per size (default: 0.875, FixRes's)",
              {},
              kInvocation,
              "sweep"},
      o.cropPcts, kCropListSyntax);
    v(Setting{"",
              "--precisions",
              "Sweep",
              "Precisions every cell runs in, comma-separated (fp32, bf16; fp16 on CUDA), in "
              "--runtime: a third axis beside size and crop (default: --precision's)",
              {},
              kInvocation,
              "sweep"},
      o.precisions, kPrecisionListSyntax);
    v(Setting{"",
              "--eval-set",
              "Sweep",
              "A further set scored at every cell, NAME=PATH (an image folder with the split's "
              "classes, e.g. shifted data; repeatable): top-1 and ECE per set",
              {},
              kInvocation,
              "sweep"},
      o.evalSets, kEvalSetSyntax);
    v(Setting{"", "--max-shift-loss", "Sweep",
              "Choose only cells whose top-1 on every --eval-set is at most this many points "
              "below the train size's (at the first crop; 0: no such rule)",
              Range::reals(0, 100, /*loOpen=*/true).orValue(0, "no rule"), kInvocation, "sweep"},
      o.maxShiftLoss);
    v(Setting{"", "--finetune-epochs", "Sweep", "Fine-tuning epochs per resolution",
              Range::integers(1, 100000), kInvocation, "sweep"},
      o.finetuneEpochs);
    v(Setting{"", "--finetune-iterations", "Sweep",
              "Cap on iterations per fine-tuning epoch (-1: the whole train split)",
              Range::integers(1).orValue(-1, "all"), kInvocation, "sweep"},
      o.finetuneIterations);
    v(Setting{"", "--finetune-lr", "Sweep", "Fine-tuning base learning rate (scaled as FixRes)",
              Range::reals(0, 1e3, /*loOpen=*/true), kInvocation, "sweep"},
      o.finetuneLr);
    v(Setting{"", "--latency-batch", "Speed",
              "Images per forward pass when timing each size (0: --batch)",
              Range::integers(1, 1 << 20).orValue(0, "--batch"), kInvocation, "sweep"},
      o.latencyBatch);
    v(Setting{"", "--latency-batches", "Speed",
              "Timed forward passes per size, after 2 untimed ones (0: speed not measured)",
              Range::integers(0, 1000000), kInvocation, "sweep"},
      o.latencyBatches);
    v(Setting{"", "--max-latency-ms", "Speed",
              "Choose the best size whose forward pass of a --latency-batch batch takes at most "
              "this many milliseconds (exit 7 when none does; 0: no limit)",
              Range::reals(0, 1e9, /*loOpen=*/true).orValue(0, "no limit"), kInvocation, "sweep"},
      o.maxLatencyMs);
    v(Setting{"", "--min-throughput", "Speed",
              "Choose the best size that reaches this many images per second (exit 7 when none "
              "does; 0: no limit)",
              Range::reals(0, 1e12, /*loOpen=*/true).orValue(0, "no limit"), kInvocation, "sweep"},
      o.minThroughput);
  }

  // The preprocessing record of the cell at `size` and `cropPct`: the model's normalisation and
  // filter, the sweep's resize rule. The cell's evaluations and, when chosen, its config.json
  // take it unchanged.
  Preprocessing cell(int size, double cropPct) const;
  // Images per timed forward pass: latencyBatch, else the evaluation batch.
  int timedBatch() const { return latencyBatch > 0 ? latencyBatch : static_cast<int>(eval.batch); }
  // The fine-tuning run at `size`, in out/finetune_<size>.
  RunConfig finetuneRun(int size) const;
  // Every check that can be made before work starts, so that a refusal leaves nothing behind:
  // every size for the architecture (its minimum, a ViT's patch multiple), with finetune every
  // size's fine-tuning run (RunConfig::validate), the timed batch's memory (checkLatencyMemory)
  // and what the folder holds (checkSweepFolder).
  void validate() const;
};

// UsageError (exit 2) when `o.out` holds fine-tuning runs (`finetune_<size>/`) of other weights,
// or, with finetune, of other settings (epochs, iterations, learning rate, ...): they would resume,
// and the sweep report another model's or another budget's results in one table.
void checkSweepFolder(const SweepOptions& o);

// The timed batch's input at the largest size times this must fit in the machine's memory.
inline constexpr double kLatencyMemoryFactor = 16;
// UsageError naming --latency-batch (or --batch) when it does not, before anything is allocated.
void checkLatencyMemory(const SweepOptions& o);

// The chosen weights as the sweep folder `out` names them: their path relative to it when they lie
// inside (a fine-tuning run's checkpoint), else `out`/weights<ext>, a hard link to `source` (a
// copy across file systems), so that the folder copied or moved elsewhere is still whole.
std::string placeChosenWeights(const std::string& out, const std::string& source);

// The stop signal every rank of `comm` agrees on (a collective): SIGTERM when any rank got SIGTERM
// or SIGHUP, else SIGINT when any got it, else 0.
int agreedStopSignal(distributed::Communicator& comm);

// A cell's score on one --eval-set.
struct SetScore {
  double top1 = NAN, ece = NAN;  // percent
  int64_t count = 0;
};

// One cell of the sweep: a size at a crop fraction, in a precision.
struct SweepRow {
  int size = 0;
  double cropPct = kFixresCropPct;
  Precision precision = Precision::kFp32;
  EvalResult plain;              // without fine-tuning
  EvalResult finetuned;          // with finetune: after the fine-tuning run at this size
  std::string finetunedWeights;  // with finetune: that run's checkpoint
  double imagesPerS = NAN;       // rank 0's speed at this size (NaN: not measured)
  double latencyMs = NAN;        // milliseconds per batch of SweepOptions::latencyBatch images
  bool pareto = false;           // no other size is both at least as fast and as accurate
  std::vector<SetScore> sets, setsFinetuned;  // per SweepOptions::evalSets
  bool shiftOk = true;  // within --max-shift-loss on every set (true without the rule)
};

struct SweepResult {
  // One per size, precision and crop fraction: sizes in order, precisions within, crops within.
  std::vector<SweepRow> rows;
  double suggested = 0;      // the apparent-size suggestion for the train size
  size_t bestPlain = 0;      // index into rows of the best top-1 without fine-tuning
  size_t bestFinetuned = 0;  // with finetune: the same after fine-tuning
  // The size chosen: the best top-1 (fine-tuned with finetune) within the budget, the faster of
  // equals; without a budget the best. None when no size meets the budget.
  std::optional<size_t> chosen;
  // With eval sets: the train size's cell at the first crop and precision.
  std::optional<size_t> shiftBaseline;
  // Its weight file (the fine-tuning run's checkpoint with finetune), relative to the sweep
  // folder once writeSweep placed it there; chosenSource is where it came from.
  std::string chosenWeights, chosenSource;
  // The stop signal that ended the sweep before its last cell (0: it ran to the end): nothing is
  // written then, and a rerun resumes the fine-tuning runs from their checkpoints.
  int stopSignal = 0;
  // What ran and timed the model in every cell (--runtime resolved): "libtorch" or "openvino";
  // the precisions of the cells (--precisions, else --precision, resolved), in order.
  std::string runtime;
  std::vector<Precision> precisions;
  // config.json of the sweep folder, the chosen model's card (ModelCard.h): timm's hub layout
  // with fixres.weights naming the weight file. Empty when nothing was chosen.
  nlohmann::ordered_json modelConfig;
};

// The top-1 that decides among rows: the fine-tuned one with finetune.
inline double decidingTop1(const SweepRow& row, bool finetune) {
  return finetune ? row.finetuned.top1 : row.plain.top1;
}

// Marks each row's `pareto`: no other row has both imagesPerS and the deciding top-1 at least as
// high, one of them higher. Rows without a speed are never on the front.
void markParetoFront(std::vector<SweepRow>& rows, bool finetune);

// The index of the row with the best deciding top-1 among those with shiftOk, latencyMs <=
// maxLatencyMs (when > 0) and imagesPerS >= minThroughput (when > 0), the faster of equal top-1s,
// the first of equal both; none when no row qualifies. With a bound, a row without a speed never
// qualifies.
std::optional<size_t> chooseWithinBudget(const std::vector<SweepRow>& rows, bool finetune,
                                         double maxLatencyMs, double minThroughput);

// An --eval-set opened: its images, checked to have the split's classes.
struct SweepSetData {
  EvalSetSpec spec;
  std::shared_ptr<const data::Dataset> dataset;
};
// The model's top-1 and ECE on each set (a collective: every rank gets the scores).
std::vector<SetScore> scoreEvalSets(models::Model& model, const std::vector<SweepSetData>& sets,
                                    const EvalOptions& options, distributed::Communicator& comm);
// sweep.json's "sets" of a row: per set name top1, ece, images and top1_change (against the
// shift baseline; null without one), and the fine-tuned ones with finetune.
nlohmann::json evalSetsJson(const SweepOptions& options, const SweepResult& result,
                            const SweepRow& row);

// With options.maxShiftLoss > 0: each row's shiftOk, from its deciding top-1 on every eval set
// against the baseline row's. Rows' set scores must be filled; a NaN score is never ok.
void markShiftRule(std::vector<SweepRow>& rows, size_t baseline, const SweepOptions& options);

// Evaluates options.model at every size (and with finetune, fine-tunes it there in a locked run
// folder, then evaluates the result); a collective of every rank of `comm`. Rank 0 creates
// options.out once the data sets are open and locks it (FolderLock: one sweep per folder) for as
// long as `lock` is kept. `onRow` is called on every rank as each row is complete. A stop signal
// ends it at the next batch or step (result.stopSignal).
SweepResult runSweep(const SweepOptions& options, distributed::Communicator& comm,
                     const RunDevice& run, std::optional<FolderLock>& lock,
                     const std::function<void(const SweepRow&)>& onRow = nullptr);

// sweep.json's document, sweep.svg's plot and sweep_speed.svg's plot (top-1 against images per
// second, the Pareto front and the budget) of a sweep.
nlohmann::json sweepJson(const SweepOptions& options, const SweepResult& result);
std::string sweepSvg(const SweepOptions& options, const SweepResult& result);
std::string sweepSpeedSvg(const SweepOptions& options, const SweepResult& result);
// sweep_grid.svg: top-1 over size (columns) x crop fraction (rows), a panel without and one with
// fine-tuning, the chosen cell marked, cells outside the budget hatched (plot/GridSvg.h).
std::string sweepGridSvg(const SweepOptions& options, const SweepResult& result);
// Writes options.out/sweep.svg, sweep_grid.svg, sweep_speed.svg (when speed was measured),
// the chosen weights (placeChosenWeights) and config.json (when a size was chosen), then
// sweep.json (each atomically); an earlier sweep's sweep_speed.svg or config.json that this one
// does not write is removed.
void writeSweep(const SweepOptions& options, SweepResult& result);

}  // namespace fixres::engine
