// Learning-rate schedules.
#include "fixres/step/Schedule.h"

#include <cmath>

#include "fixres/common/Error.h"

namespace fixres::engine {

const ChoiceTable<ScheduleKind>& scheduleKinds() {
  static const ChoiceTable<ScheduleKind> kTable = {"learning-rate schedule",
                                                   {{"step", ScheduleKind::kStep},
                                                    {"cosine", ScheduleKind::kCosine},
                                                    {"constant", ScheduleKind::kConstant}}};
  return kTable;
}

ScheduleKind parseScheduleKind(const std::string& name) {
  return parseChoice(scheduleKinds(), name, "--lr-schedule");
}

Schedule::Schedule(ScheduleOptions o) : o_(std::move(o)) {
  FIXRES_CHECK(o_.baseLr >= 0, UsageError, "learning rate must be >= 0, got ", o_.baseLr);
  ScheduleOptions::visitSettings(o_, [](const Setting& s, const auto& v, auto&&... table) {
    if constexpr (sizeof...(table) == 0) checkSetting(s, v);
  });
  FIXRES_CHECK(o_.totalEpochs >= 1, UsageError, "--epochs must be >= 1, got ", o_.totalEpochs);
}

double Schedule::rate(int epoch, double progress) const {
  const double t = epoch + progress;
  double lr = o_.baseLr;
  if (o_.kind == ScheduleKind::kStep) {
    // torch StepLR stepped once at the start of each epoch, as the reference does.
    lr = o_.baseLr * std::pow(o_.gamma, epoch / o_.stepEpochs);
  } else if (o_.kind == ScheduleKind::kCosine) {
    const double span = std::max(1e-9, o_.totalEpochs - o_.warmupEpochs);
    const double x = std::min(1.0, std::max(0.0, (t - o_.warmupEpochs) / span));
    lr = o_.minLr + 0.5 * (o_.baseLr - o_.minLr) * (1.0 + std::cos(M_PI * x));
  }
  if (o_.warmupEpochs > 0 && t < o_.warmupEpochs) lr *= t / o_.warmupEpochs;
  return lr;
}

double fixresScaledLr(double lr, int batchPerProcess, int processes) {
  return 8.0 * lr * batchPerProcess * processes / 512.0;
}

}  // namespace fixres::engine
