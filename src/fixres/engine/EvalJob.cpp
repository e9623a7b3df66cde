// The eval job (EvalJob.h).
#include "fixres/engine/EvalJob.h"

#include <algorithm>
#include <filesystem>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"

namespace fixres::engine {

namespace {
// A warning when `evaluated` is the folder the model's run trained on (its config.json's
// train_path): a score on training images says nothing of unseen ones.
void warnIfTrainingImages(const ResolvedModel& model, const std::string& evaluated) {
  if (!model.card || model.card->trainPath.empty()) return;
  std::error_code ec;
  if (!std::filesystem::equivalent(evaluated, model.card->trainPath, ec) || ec) return;
  log::warn(evaluated, " holds the images ", model.card->folder,
            " was trained on (its config.json's train_path): the score says nothing of unseen "
            "images");
}
}  // namespace

void EvalRequest::validate() const {
  FIXRES_CHECK(!imnetPath.empty() || !datasetPath.empty(), UsageError,
               "eval needs --imnet-path or --dataset-path");
  FIXRES_CHECK(
      imnetPath.empty() || datasetPath.empty(), UsageError,
      "--imnet-path excludes --dataset-path: give one (the folder of train/ and val/, or the "
      "folder evaluated)");
  FIXRES_CHECK(!model.spec.weightPath.empty(), UsageError, "eval needs --weight-path");
  FIXRES_CHECK(labelsCsv.empty() || !datasetPath.empty(), UsageError,
               "--labels-csv needs --dataset-path (the flat folder it labels)");
  std::error_code ec;
  FIXRES_CHECK(labelsCsv.empty() || std::filesystem::is_regular_file(labelsCsv, ec), UsageError,
               "--labels-csv ", labelsCsv, ": no such file");
  FIXRES_CHECK(heldOut.empty() || !report.empty(), UsageError,
               "--fit-temperature needs --report (the folder its calibration is written to)");
}

EvalJob::EvalJob(const EvalRequest& request) : request_(request) {
  const EvalRequest& r = request;
  r.validate();
  model_ = resolveModel(r.model, {224});
  const std::string evaluated = r.datasetPath.empty() ? r.imnetPath + "/val" : r.datasetPath;
  dataset_ = !r.labelsCsv.empty() ? data::openLabelsCsv(r.datasetPath, r.labelsCsv,
                                                        model_.classNames, model_.classCount())
                                  : data::openDataset(evaluated, r.fileIndex);
  dataset_ = data::labelledAs(dataset_, model_.classNames);
  warnIfTrainingImages(model_, evaluated);
  if (!r.heldOut.empty()) {
    auto heldOut = data::labelledAs(data::openDataset(r.heldOut, r.fileIndex), model_.classNames);
    data::checkSameClasses(*heldOut, *dataset_);
    heldOut_ = heldOut;
  }
}

namespace {
// The report's names of `classes` classes (the logits'): the data's (the model's, when it names
// them), or indices where the data names another number of classes.
std::vector<std::string> reportClassNames(const std::vector<std::string>& data, size_t classes) {
  if (data.size() == classes) return data;
  std::vector<std::string> names;
  for (size_t c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  return names;
}
}  // namespace

// One size with --report: every image's logits gathered on rank 0, which writes the report into
// its folder (and keeps it in `kept`); every rank gets the summary.
EvalResult EvalJob::reportSize(models::Model& model, const EvalOptions& o, int size,
                               distributed::Communicator& comm,
                               std::optional<ClassReport>& kept) const {
  const std::string& report = request_.report;
  const std::string dir =
      model_.sizes().size() == 1
          ? report
          : (std::filesystem::path(report) / (std::to_string(size) + "px")).string();
  auto ex = extract(model, dataset_, o, comm, /*embeddings=*/false);
  std::optional<TemperatureFit> fit;
  std::string heldOutSource;
  if (heldOut_ && stopSignal() == 0) {
    auto h = o;
    h.limit = -1;
    auto held = extract(model, heldOut_, h, comm, /*embeddings=*/false);
    heldOutSource = heldOut_->source();
    if (comm.rank() == 0) fit = fitTemperature(held.logits, held.labels);
  }
  std::vector<double> summary(4, 0.0);
  if (comm.rank() == 0) {
    kept = classReport(ex.logits, ex.labels);
    ReportInfo info;
    info.architecture = model_.spec.architectureOrDefault();
    info.weights = model_.spec.weightPath;
    info.dataset = dataset_->source();
    info.inputSize = size;
    info.classNames = reportClassNames(dataset_->classes(), kept->classes.size());
    info.complete = ex.complete;
    info.temperature = fit;
    info.temperatureDataset = heldOutSource;
    writeEvalReport(dir, ex.logits, ex.labels, *kept, info);
    summary = {kept->top1, kept->top5, kept->loss, static_cast<double>(kept->count)};
    log::info("report at ", size, " px -> ", dir, ": ECE ", 100 * kept->reliability.ece, " %",
              fit ? detail::concat("; temperature ", fit->temperature, " (fitted on ", fit->images,
                                   " held-out images)")
                  : std::string());
  }
  summary = distributed::allReduceScalars(comm, summary);
  EvalResult r;
  r.top1 = summary[0];
  r.top5 = summary[1];
  r.loss = summary[2];
  r.count = static_cast<int64_t>(summary[3]);
  r.inputSize = size;
  r.complete = ex.complete;
  return r;
}

EvalOutcome EvalJob::run(const RunDevice& device, distributed::Communicator& comm,
                         const std::function<void(const EvalResult&)>& onResult) const {
  auto model = buildModel(model_, static_cast<int64_t>(dataset_->classes().size()), device).model;
  // A first SIGINT/SIGTERM ends the size being evaluated at its next batch; the results so far
  // are kept (the command writes them, marked partial).
  installStopHandlers();
  EvalOutcome out;
  for (size_t k = 0; k < model_.sizes().size() && stopSignal() == 0; ++k) {
    const int size = model_.sizes()[k];
    auto o = model_.evalOptions(request_.eval, size, device);
    o.limit = request_.limit;
    o.stopOnSignal = true;
    const EvalResult r = request_.report.empty() ? evaluate(model, dataset_, o, comm)
                                                 : reportSize(model, o, size, comm, out.lastReport);
    if (k == 0 || r.top1 > out.bestTop1) {
      out.bestTop1 = r.top1;
      out.bestCount = r.count;
    }
    out.results.push_back(r.toJson());
    onResult(r);
  }
  out.signal = stopSignal();
  return out;
}

nlohmann::json EvalJob::document(const EvalOutcome& outcome) const {
  nlohmann::json doc = {{"architecture", model_.spec.architectureOrDefault()},
                        {"weights", model_.spec.weightPath},
                        {"resize_mode", choiceName(image::resizeModes(), model_.input.resizeMode)},
                        {"test_flip", request_.eval.testFlip},
                        {"results", outcome.results}};
  if (outcome.signal != 0) {
    doc["partial"] = true;
    doc["stopped_by_signal"] = outcome.signal;
  }
  return doc;
}

void EvalJob::checkClassOrder(const EvalOutcome& outcome) const {
  const auto& classes = dataset_->classes();
  const auto recorded = recordedTop1(model_.spec.weightPath);
  if (!recorded ||
      !farBelowRecord(outcome.bestTop1, outcome.bestCount, classes.size(), recorded->top1))
    return;
  const std::string message = classOrderMessage(
      outcome.bestTop1, outcome.bestCount, classes.size(), *recorded, model_.classNames, classes,
      outcome.lastReport ? &*outcome.lastReport : nullptr);
  // An error only when the names show the mapping wrong; else the data may simply differ.
  if (mappingShownWrong(model_.classNames, classes)) FIXRES_FAIL(DataError, message);
  log::warn(message);
}

}  // namespace fixres::engine
