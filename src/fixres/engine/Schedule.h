// Learning-rate schedules, a pure function of (epoch, iteration) so that a resumed run gets
// exactly the rate it would have had.
#pragma once

#include <string>

namespace fixres::engine {

struct ScheduleOptions {
  std::string kind = "step";  // step (StepLR, FixRes) | cosine | constant
  double baseLr = 0.1;        // after scaling
  int stepEpochs = 30;        // step: decay every stepEpochs
  double gamma = 0.1;         // step: decay factor
  double warmupEpochs = 0;    // linear warm-up from 0, in (fractional) epochs
  int totalEpochs = 1;        // cosine: the horizon
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
