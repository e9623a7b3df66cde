// Keep-best checkpoints (engine/KeepBestOptions.h), a RunPart.
#include "fixres/engine/KeepBestOptions.h"

#include <algorithm>
#include <filesystem>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/engine/RunConfig.h"
#include "fixres/train/RunPart.h"

namespace fixres::engine {
namespace keep_best {

constexpr const char* kListFile = "best_checkpoints.json";
constexpr uint64_t kListMaxBytes = 16 << 20;  // a list of N entries is a few hundred bytes each

// One kept checkpoint: its epoch (0-based, as its file name), file name and metrics.
struct Kept {
  int64_t epoch = 0;
  std::string file;
  nlohmann::json eval;
  double top1() const { return eval.at("top1").get<double>(); }
};

class KeepBest : public RunPart {
 public:
  explicit KeepBest(int n) : n_(n) {}
  const char* name() const override { return "keep-best checkpoints"; }

  void start(const RunMoment& at, bool resumed, bool hasValidation) override {
    FIXRES_CHECK(hasValidation, UsageError,
                 "--checkpoint-hist ranks checkpoints by held-out top-1: the run has no "
                 "validation set");
    if (at.rank != 0) return;
    const std::string path = at.runDir + "/" + kListFile;
    // The first epoch ranked here: the epoch checkpoints of a run resumed with --checkpoint-hist
    // after epochs without it stay where they are.
    since_ = at.state.epoch;
    if (!fileExists(path)) return;
    const std::string text =
        readRegularFile<DataError>(path, kListMaxBytes, "kept-checkpoint list");
    nlohmann::json doc;
    std::string why;
    FIXRES_CHECK(parseJsonInput(text, &doc, &why) && doc.is_object() && doc.contains("since") &&
                     doc.at("since").is_number_integer() && doc.contains("checkpoints") &&
                     doc.at("checkpoints").is_array(),
                 DataError, path, ": not fixres's list of kept checkpoints (since, checkpoints)",
                 why.empty() ? "" : ": " + why);
    since_ = doc.at("since").get<int64_t>();
    for (const auto& k : doc.at("checkpoints")) {
      FIXRES_CHECK(k.is_object() && k.contains("epoch") && k.at("epoch").is_number_integer() &&
                       k.contains("file") && k.at("file").is_string() && k.contains("eval") &&
                       k.at("eval").is_object() && k.at("eval").contains("top1") &&
                       k.at("eval").at("top1").is_number(),
                   DataError, path, ": an entry lacks an integer epoch, a file or eval.top1");
      kept_.push_back(
          {k.at("epoch").get<int64_t>(), k.at("file").get<std::string>(), k.at("eval")});
    }
  }

  void epochEnd(const RunMoment&, const EvalResult* eval, nlohmann::json&) override {
    pending_ = eval ? std::optional<nlohmann::json>(eval->toJson()) : std::nullopt;
  }

  void checkpointWritten(const RunMoment& at, const std::string& epochFile) override {
    if (epochFile.empty() || at.rank != 0) return;
    const int64_t epoch = at.state.epoch - 1;
    kept_.erase(
        std::remove_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.epoch == epoch; }),
        kept_.end());
    if (pending_) kept_.push_back({epoch, std::filesystem::path(epochFile).filename(), *pending_});
    pending_.reset();
    // Best first; among equals the earlier epoch first (a stable sort, as timm's).
    std::stable_sort(kept_.begin(), kept_.end(),
                     [](const Kept& a, const Kept& b) { return a.top1() > b.top1(); });
    if (kept_.size() > static_cast<size_t>(n_)) kept_.resize(static_cast<size_t>(n_));
    // The list first (atomically), then the files it no longer holds: a crash between the two
    // leaves a file too many, which the next epoch's pass removes.
    nlohmann::json list = nlohmann::json::array();
    for (const auto& k : kept_)
      list.push_back({{"epoch", k.epoch}, {"file", k.file}, {"eval", k.eval}});
    const nlohmann::json doc = {{"since", since_}, {"checkpoints", list}};
    writeFileAtomic(at.runDir + "/" + kListFile, doc.dump(2) + "\n");
    removeOthers(at.runDir, epoch);
  }

 private:
  // checkpoint_<k>.pth of the epochs since_ to `last` that the list does not hold (one dropped
  // from the list just before a crash goes with the next pass).
  void removeOthers(const std::string& runDir, int64_t last) const {
    for (const auto& entry : std::filesystem::directory_iterator(runDir)) {
      const std::string name = entry.path().filename();
      const auto epoch = epochCheckpointIndex(name);
      if (!epoch || *epoch < since_ || *epoch > last) continue;
      if (std::any_of(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.file == name; }))
        continue;
      std::error_code ec;
      std::filesystem::remove(entry.path(), ec);
      if (ec)
        log::warn("--checkpoint-hist: could not remove ", entry.path().string(), ": ",
                  ec.message());
    }
  }

  int n_;
  int64_t since_ = 0;
  std::vector<Kept> kept_;
  std::optional<nlohmann::json> pending_;
};

}  // namespace keep_best

std::unique_ptr<RunPart> makeKeepBest(const RunConfig& config, const RunServices&) {
  if (config.keepBest.checkpointHist <= 0) return nullptr;
  return std::make_unique<keep_best::KeepBest>(config.keepBest.checkpointHist);
}

}  // namespace fixres::engine
