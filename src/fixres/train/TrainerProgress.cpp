// The Trainer's reading of its steps: the device-side counts of the steps since the last read
// (TrainStep::takeWindow) folded into the epoch's, skipped steps warned of, a halted run stopped at
// the step that halted it; and the progress lines and metrics records made from them.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"
#include "fixres/train/Trainer.h"

namespace fixres::engine {
namespace {

std::string nonFiniteWhat(NonFinite kind) {
  switch (kind) {
    case NonFinite::kNanLoss:
      return "the loss is NaN";
    case NonFinite::kInfLoss:
      return "the loss is infinite";
    default:
      return "the averaged gradient is not finite";
  }
}

// "42s", "3m05s", "2h07m": a remaining time as a person reads it.
std::string durationText(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  return buf;
}

}  // namespace

std::optional<Trainer::Stop> Trainer::readSteps() {
  const StepWindow w = step_->takeWindow();
  if (w.steps == 0) return std::nullopt;
  // The window's steps are the last w.steps counted: step k of it is global step first + k.
  const int64_t first = state_.globalStep - w.steps + 1;
  const int64_t firstIteration = state_.iteration - w.steps + 1;
  auto where = [&](int64_t k, NonFinite kind) {
    return detail::concat("step ", first + k, " (epoch ", state_.epoch + 1, ", iteration ",
                          firstIteration + k, "): ", nonFiniteWhat(kind));
  };
  epoch_.lossSum += w.lossSum;
  epoch_.lossCount += w.lossCount;
  epoch_.overflows += w.overflows;
  epoch_.lastApplied = w.lastApplied;
  if (w.haltedAt >= 0) {
    // The halting step and every later one were skipped (the model is as before it): the counts
    // go back to the step before it, which a stop then saves.
    const int64_t undone = w.steps - w.haltedAt;
    epoch_.skipped += w.skipped - undone;
    const std::string what = where(w.haltedAt, w.haltKind);
    state_.iteration -= undone;
    state_.globalStep -= undone;
    if (cfg_.nanPolicy == NanPolicy::kStop)
      return Stop{"a loss that is not finite", 0,
                  what +
                      "; stopped (--nan-policy stop: lower --learning-rate, or skip such "
                      "steps with --nan-policy skip)"};
    return Stop{"a loss that is not finite", 0,
                detail::concat(what, "; stopped: ", step_->maxSkippedInARow() + 1,
                               " steps in a row skipped (--nan-policy skip), the run diverged "
                               "(lower --learning-rate)")};
  }
  if (w.skipped > 0) {
    log::warn(where(w.firstSkipped, w.firstKind), "; step skipped (--nan-policy skip)",
              w.skipped > 1 ? detail::concat(", and ", w.skipped - 1, " more of the ", w.steps,
                                             " steps up to step ", first + w.steps - 1)
                            : std::string());
    epoch_.skipped += w.skipped;
  }
  return std::nullopt;
}

void Trainer::reportProgress(int64_t iterations, double lr, double epochSeconds, int64_t done,
                             const StepTally& epochTally, const StepTally& window,
                             double windowSeconds) {
  const double ips = epochTally.images * comm_.worldSize() / std::max(epochSeconds, 1e-9);
  // The epoch's rest and the run's: this epoch's time per iteration for every iteration left
  // (the evaluations between epochs not counted).
  const double perIteration = epochSeconds / done;
  const double eta = perIteration * (iterations - state_.iteration);
  const double runEta =
      eta + perIteration * iterations * std::max<int64_t>(0, cfg_.epochs - state_.epoch - 1);
  const double meanLoss = epoch_.lossCount > 0 ? epoch_.lossSum / epoch_.lossCount : NAN;
  // This rank's share of the wall time since the last progress line spent waiting for data:
  // near 1 when the loader cannot keep up with the steps.
  const double waitShare =
      windowSeconds > 0 ? std::clamp(window.dataWaitSeconds / windowSeconds, 0.0, 1.0) : 0.0;
  logProgress(state_.iteration, iterations, meanLoss, lr, ips, waitShare, eta, runEta);
  nlohmann::json record = {{"step", state_.globalStep},
                           {"epoch", state_.epoch},
                           {"iteration", state_.iteration},
                           {"lr", lr},
                           {"loss", meanLoss},
                           {"images_per_s", ips},
                           {"data_wait_share", waitShare},
                           {"eta_s", eta},
                           {"run_eta_s", runEta}};
  if (epoch_.skipped > 0) record["skipped_steps"] = epoch_.skipped;
  if (cfg_.progressive.enabled()) record["train_size"] = trainTransform_.inputSize;
  if (const LossScaler* scaler = step_->lossScaler()) {
    record["overflow_steps"] = epoch_.overflows;
    record["loss_scale"] = scaler->scale();
  }
  appendMetrics(record);
}

void Trainer::appendMetrics(const nlohmann::json& line) {
  // The numbers rounded once (MetricsLog writes them so), and the event file given the same
  // values: its float32 of a mean that fell on a float32 midpoint could otherwise round the
  // other way than the JSON's.
  const nlohmann::json rounded = roundedNumbers(line);
  if (metrics_) metrics_->append(rounded);
  if (comm_.rank() == 0)
    for (auto& part : parts_) part->recorded(moment(), rounded);
}

void Trainer::logProgress(int64_t it, int64_t n, double loss, double lr, double ips,
                          double waitShare, double eta, double runEta) {
  if (comm_.rank() != 0) return;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "epoch %lld/%d  iter %lld/%lld  loss %.4f  lr %.5g  %.1f img/s  data %.0f%%  ETA "
                "%s (run %s)",
                static_cast<long long>(state_.epoch + 1), cfg_.epochs, static_cast<long long>(it),
                static_cast<long long>(n), loss, lr, ips, 100.0 * waitShare,
                durationText(eta).c_str(), durationText(runEta).c_str());
  if (::isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "\r%s", buf);
    if (it == n) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  } else {
    log::info(buf);
  }
}

}  // namespace fixres::engine
