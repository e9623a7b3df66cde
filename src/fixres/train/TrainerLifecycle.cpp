// The Trainer's start and end: resuming from checkpoint.pth (refusing a checkpoint of another
// run), the run folder's first files, stops (step limit, signals agreed by every rank), the save
// before an error ends the run, and the checkpoint writes.
#include "fixres/train/Trainer.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"

namespace fixres::engine {
namespace {

std::string signalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal);
  }
}

}  // namespace

bool Trainer::resume() {
  auto resumed = resumeFromRunDir(
      cfg_.runDir, *model_, optimizerRef(), [this](const CheckpointState& s) { checkResumable(s); },
      partStates());
  if (!resumed) return false;
  state_ = *resumed;
  state_.configJson = jsonText(cfg_.toJson());
  log::info("resumed from ", cfg_.runDir, " at epoch ", state_.epoch, ", iteration ",
            state_.iteration, " (step ", state_.globalStep, ")");
  return true;
}

void Trainer::checkResumable(const CheckpointState& stored) const {
  std::vector<ConfigChange> changes;
  if (!stored.configJson.empty()) {
    nlohmann::json json;
    std::string why;
    FIXRES_CHECK(parseJsonInput(stored.configJson, &json, &why) && json.is_object(), WeightsError,
                 "the checkpoint's config is not a JSON object", why.empty() ? "" : ": " + why);
    changes = resumeChanges(json, cfg_);
  }
  // Another number of processes changes the sharding and the scaled learning rate, but resuming
  // a job on fewer or more GPUs is legitimate: noted, not refused.
  if (stored.worldSize > 0 && stored.worldSize != comm_.worldSize())
    changes.push_back(
        {"world_size", std::to_string(stored.worldSize), std::to_string(comm_.worldSize()), false});
  std::string fixed, other;
  for (const auto& c : changes) {
    std::string& list = c.definesRun ? fixed : other;
    list += (list.empty() ? "" : "; ") + c.key + ": " + c.before + " -> " + c.after;
  }
  FIXRES_CHECK(fixed.empty() || cfg_.allowConfigChange, UsageError, "cannot resume ", cfg_.runDir,
               " with settings that differ from the ones it started with (", fixed,
               "): give the same ones, another --job-id, or --allow-config-change");
  if (!fixed.empty()) log::warn("resuming with changed settings (--allow-config-change): ", fixed);
  if (!other.empty()) log::info("resuming with changed settings: ", other);
}

// Written once the run really starts: the data and model are loaded and the checkpoint, if any,
// accepted.
void Trainer::startRunFolder(bool resumed) {
  if (comm_.rank() == 0) {
    makeDirectories(cfg_.runDir);
    // The settings, and the class names the classifier's outputs stand for (ModelCard.h reads
    // them back for predict and export; the settings' reader ignores the key).
    auto config = cfg_.toJson();
    config["class_names"] = train_->classes();
    writeFileAtomic(cfg_.runDir + "/config.json", jsonText(config, 2) + "\n");
    std::optional<MetricsLog::Position> at;
    if (resumed) at = MetricsLog::Position{state_.globalStep, state_.epoch};
    metrics_ = std::make_unique<MetricsLog>(cfg_.runDir + "/metrics.jsonl", at);
    for (auto& part : parts_) part->opened(moment(), resumed);
    logHeader(resumed);
  }
  comm_.barrier();
}

void Trainer::logHeader(bool resumed) const {
  const int world = comm_.worldSize();
  log::info(cfg_.mode == RunMode::kFinetune ? "finetune" : "train", " -> ", cfg_.runDir,
            resumed ? detail::concat(" (resumed at epoch ", state_.epoch, ", step ",
                                     state_.globalStep, ")")
                    : std::string(),
            ": ", cfg_.model.architectureName(), " at ", cfg_.inputSize, " px; ", train_->size(),
            " training images in ", train_->classes().size(), " classes",
            val_ ? detail::concat(", ", val_->size(), " ", splitName(), " images at ",
                                  cfg_.evaluationSize(), " px")
                 : std::string(),
            "; batch ", cfg_.batch, world > 1 ? detail::concat(" x ", world, " processes") : "",
            ", ", cfg_.epochs, " epoch", cfg_.epochs == 1 ? "" : "s");
}

RunSummary Trainer::stopRun(const Stop& stop) {
  const bool trained = state_.globalStep > stepsAtStart_ || unsaved_;
  // The state is what every rank holds (weights, momentum: identical; buffers: rank 0's).
  const bool finite = !unsaved_ || step_->stateFinite();
  if (unsaved_ && finite) {
    writeCheckpoints(false);
    comm_.barrier();
  }
  summary_.stoppedEarly = true;
  summary_.stopSignal = stop.signal;
  const std::string saved =
      finite ? "the state of step " + std::to_string(state_.globalStep) + " is saved in " +
                   cfg_.runDir + "/checkpoint.pth"
             : "nothing saved (the weights are not finite): the last checkpoint in " + cfg_.runDir +
                   " is kept";
  if (!stop.error.empty()) throw Error(ExitCode::kOther, stop.error + "; " + saved);
  if (trained) {
    log::info("stopped after step ", state_.globalStep, " (", stop.why, "); ", saved,
              "; run the same command again to resume");
  } else {
    log::info("already at step ", state_.globalStep, " (", stop.why,
              "): nothing to train; run folder ", cfg_.runDir);
  }
  return summarize();
}

// An error ends the run after training began: rank 0 saves the last completed step first when it
// can, then the error goes on as it came. Nothing is saved when the error came from a checkpoint
// write (it would fail again), interrupted an update, or the weights are not finite.
void Trainer::saveBeforeExit() {
  if (comm_.rank() != 0 || !unsaved_ || saving_) return;
  for (auto& part : parts_) {
    if (part->consistent()) continue;
    log::warn("no checkpoint saved: the error interrupted an update of ", part->name());
    return;
  }
  if (!step_->rollBack()) {
    log::warn("no checkpoint saved: the error interrupted a weight update");
    return;
  }
  try {
    readSteps();  // the steps' counts read (a halted step's taken back) before they are saved
  } catch (const std::exception& e) {
    log::warn("no checkpoint saved: the steps' counts could not be read: ", oneLine(e.what()));
    return;
  }
  if (!step_->stateFinite()) {
    log::warn("no checkpoint saved: the weights are not finite");
    return;
  }
  try {
    writeCheckpoints(false);
    log::warn("saved the state of step ", state_.globalStep, " in ", cfg_.runDir,
              "/checkpoint.pth before exiting; rerun the same command to resume");
  } catch (const std::exception& e) {
    log::warn("could not save a checkpoint before exiting: ", oneLine(e.what()));
  }
}

void Trainer::writeCheckpoints(bool epochEnd) {
  unsaved_ = false;
  if (comm_.rank() != 0) return;
  saving_ = true;  // stays set when a write fails
  state_.learningRate = schedule_->rate(static_cast<int>(state_.epoch));
  state_.worldSize = comm_.worldSize();
  saveCheckpoint(cfg_.runDir + "/checkpoint.pth", state_, *model_, optimizerRef(), partStates());
  std::string epochFile;
  if (epochEnd) {
    epochFile = cfg_.runDir + "/checkpoint_" + std::to_string(state_.epoch - 1) + ".pth";
    saveCheckpoint(epochFile, state_, *model_, optimizerRef(), partStates());
  }
  for (auto& part : parts_) part->checkpointWritten(moment(), epochFile);
  saving_ = false;
}

std::optional<Trainer::Stop> Trainer::stepLimit() const {
  if (cfg_.stopAfterSteps < 0 || state_.globalStep < cfg_.stopAfterSteps) return std::nullopt;
  return Stop{"--stop-after-steps " + std::to_string(cfg_.stopAfterSteps), 0, ""};
}

std::optional<Trainer::Stop> Trainer::agreedStop() {
  // Every rank must stop at the same step (rank 0 saves, all meet at a barrier), so the ranks
  // agree on one signal: the highest-numbered one any rank got (SIGTERM before SIGINT before
  // SIGHUP), whichever it is.
  int signal = stopSignal();
  if (comm_.worldSize() > 1) {
    std::vector<double> got(NSIG, 0.0);  // ranks that got each signal
    if (signal > 0 && signal < NSIG) got[static_cast<size_t>(signal)] = 1;
    got = distributed::allReduceScalars(comm_, got);
    signal = 0;
    for (int s = 1; s < NSIG; ++s)
      if (got[static_cast<size_t>(s)] > 0) signal = s;
  }
  if (signal == 0) return std::nullopt;
  return Stop{signalName(signal), signal, ""};
}

}  // namespace fixres::engine
