// Learning-rate schedules, a pure function of (epoch, iteration) so that a resumed run gets
// exactly the rate it would have had.
#pragma once

#include <string>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"

namespace fixres::engine {

// step: StepLR (FixRes); cosine: half-cosine to 0 over the epochs; constant.
enum class ScheduleKind { kStep, kCosine, kConstant };
const ChoiceTable<ScheduleKind>& scheduleKinds();         // step, cosine, constant
ScheduleKind parseScheduleKind(const std::string& name);  // UsageError naming --lr-schedule

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::kStep;
  double baseLr = 0.1;      // after scaling
  int stepEpochs = 30;      // step: decay every stepEpochs
  double gamma = 0.1;       // step: decay factor
  double warmupEpochs = 0;  // linear warm-up from 0, in (fractional) epochs
  int totalEpochs = 1;      // cosine: the horizon
  double minLr = 0;         // cosine: the floor it falls to (torch's eta_min), not scaled

  // The settings of a run's schedule (baseLr and totalEpochs follow from others).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    const char* const g = "Optimisation";
    v(Setting{"lr_schedule", "--lr-schedule", g,
              "Learning-rate schedule: step (StepLR), cosine or constant"},
      o.kind, scheduleKinds());
    v(Setting{"lr_step", "--lr-step", g, "StepLR period in epochs", Range::integers(1)},
      o.stepEpochs);
    v(Setting{"lr_gamma", "--lr-gamma", g, "StepLR factor", Range::reals(0, INFINITY, true)},
      o.gamma);
    v(Setting{"warmup_epochs", "--warmup-epochs", g, "Linear warm-up (epochs)", Range::reals(0)},
      o.warmupEpochs);
    v(Setting{"lr_min", "--lr-min", g,
              "Floor of the cosine schedule: the rate falls to this instead of 0 (torch's "
              "CosineAnnealingLR eta_min, the torchvision references' --lr-min; not scaled)",
              Range::reals(0)},
      o.minLr);
  }
};

// Validates options at construction (UsageError naming the bad value).
class Schedule {
 public:
  explicit Schedule(ScheduleOptions options);
  // epoch is 0-based; progress in [0, 1) is the fraction of the epoch already done.
  double rate(int epoch, double progress = 0.0) const;
  const ScheduleOptions& options() const { return o_; }

 private:
  ScheduleOptions o_;
};

// The reference's linear scaling: 8 x lr x batch_per_process x processes / 512.
double fixresScaledLr(double lr, int batchPerProcess, int processes);

}  // namespace fixres::engine
