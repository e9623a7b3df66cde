// The device-side counts of the training steps between two reads.
#include "fixres/step/StepTally.h"

namespace fixres::engine {
namespace {

// The slots of the accumulator. Those from kInARow on outlive a window.
enum Slot : int64_t {
  kApplied,
  kLossSum,
  kLossCount,
  kFirstSkipped,
  kFirstKind,
  kHaltedAt,
  kHaltKind,
  kLastApplied,
  kSkipped,
  kDeviceSkips,
  kIndex,   // steps recorded in the window (on the device: a replayed graph counts too)
  kInARow,  // non-finite steps in a row
  kHalted,  // 1 once halted
  kSlots
};
constexpr int64_t kWindowSlots = kInARow;

// A window's starting values (the indices -1).
torch::Tensor windowStart(const torch::Device& device) {
  auto t = torch::zeros({kWindowSlots}, torch::TensorOptions().dtype(torch::kDouble));
  t[kFirstSkipped] = -1;
  t[kHaltedAt] = -1;
  return t.to(device);
}

}  // namespace

StepTally::StepTally(const torch::Device& device, int64_t maxSkippedInARow)
    : acc_(torch::zeros({kSlots}, torch::TensorOptions().dtype(torch::kDouble).device(device))),
      max_(maxSkippedInARow) {
  acc_.narrow(0, 0, kWindowSlots).copy_(windowStart(device));
}

torch::Tensor StepTally::record(const torch::Tensor& loss, const torch::Tensor& kind,
                                bool deviceSkip) {
  torch::NoGradGuard noGrad;
  auto slot = [&](Slot s) { return acc_.select(0, s); };
  const auto k = kind.to(torch::kDouble);
  const auto found = k > 0;
  const auto halted = slot(kHalted) > 0;
  const auto inARow = (slot(kInARow) + 1) * found.to(torch::kDouble);
  const auto haltNow =
      found.logical_and(halted.logical_not()).logical_and(max_ == 0 ? found : inARow > max_);
  const auto skip = found.logical_or(halted);
  const auto keep = skip.logical_not().to(torch::kDouble);
  const auto index = slot(kIndex).clone();
  const auto firstNow = found.logical_and(slot(kFirstSkipped) < 0);
  slot(kInARow).copy_(inARow);
  slot(kFirstKind).copy_(torch::where(firstNow, k, slot(kFirstKind)));
  slot(kFirstSkipped).copy_(torch::where(firstNow, index, slot(kFirstSkipped)));
  slot(kHaltKind).copy_(torch::where(haltNow, k, slot(kHaltKind)));
  slot(kHaltedAt).copy_(torch::where(haltNow, index, slot(kHaltedAt)));
  slot(kHalted).copy_(torch::where(haltNow, torch::ones_like(keep), slot(kHalted)));
  slot(kApplied).add_(keep);
  slot(kLossCount).add_(keep);
  slot(kLossSum).add_(torch::where(skip, torch::zeros_like(keep), loss.to(torch::kDouble)));
  slot(kLastApplied).copy_(keep);
  slot(kSkipped).add_(1 - keep);
  if (deviceSkip) slot(kDeviceSkips).add_(1 - keep);
  slot(kIndex).add_(1);
  return skip;
}

void StepTally::noteOverflow() {
  torch::NoGradGuard noGrad;
  acc_.select(0, kApplied).sub_(1);
  acc_.select(0, kLastApplied).zero_();
  ++overflows_;
}

torch::Tensor StepTally::deviceSkips() const {
  return acc_.select(0, kDeviceSkips).to(torch::kFloat);
}

StepWindow StepTally::take() {
  const auto h = acc_.to(torch::kCPU);
  const double* v = h.data_ptr<double>();
  auto count = [&](Slot s) { return static_cast<int64_t>(v[s]); };
  StepWindow w;
  w.steps = count(kIndex);
  w.applied = count(kApplied);
  w.skipped = count(kSkipped);
  w.overflows = overflows_;
  w.lossSum = v[kLossSum];
  w.lossCount = count(kLossCount);
  w.firstSkipped = count(kFirstSkipped);
  w.firstKind = static_cast<NonFinite>(count(kFirstKind));
  w.haltedAt = count(kHaltedAt);
  w.haltKind = static_cast<NonFinite>(count(kHaltKind));
  w.skippedInARow = count(kInARow);
  w.lastApplied = v[kLastApplied] > 0;
  w.deviceSkips = count(kDeviceSkips);
  acc_.narrow(0, 0, kWindowSlots).copy_(windowStart(acc_.device()));
  overflows_ = 0;
  return w;
}

}  // namespace fixres::engine
