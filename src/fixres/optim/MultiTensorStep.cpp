// The update paths of the optimizers, picked from their descriptors.
#include "fixres/optim/MultiTensorStep.h"

#include "fixres/common/Error.h"

namespace fixres::optim {

const ChoiceTable<OptimizerImpl>& optimizerImpls() {
  static const ChoiceTable<OptimizerImpl> kTable = {"optimizer implementation",
                                                    {{"auto", OptimizerImpl::kAuto},
                                                     {"loop", OptimizerImpl::kLoop},
                                                     {"foreach", OptimizerImpl::kForeach},
                                                     {"fused", OptimizerImpl::kFused}}};
  return kTable;
}

bool hasFusedKernel(OptimizerKind kind) {
  return kind->fusedStep != nullptr;
}

OptimizerImpl resolveOptimizerImpl(OptimizerImpl impl, OptimizerKind kind) {
  if (impl != OptimizerImpl::kAuto) return impl;
  if (hasFusedKernel(kind)) return OptimizerImpl::kFused;
  return kind->foreachStep ? OptimizerImpl::kForeach : OptimizerImpl::kLoop;
}

void checkOptimizerImpl(OptimizerImpl impl, OptimizerKind kind) {
  FIXRES_CHECK(impl != OptimizerImpl::kFused || hasFusedKernel(kind), UsageError,
               "--optimizer-impl fused: this build has no fused ", kind->name,
               " kernel (LibTorch 2.x has SGD's and AdamW's; foreach works for sgd, adamw and "
               "rmsprop)");
  FIXRES_CHECK(impl != OptimizerImpl::kForeach || kind->foreachStep, UsageError,
               "--optimizer-impl foreach: ", kind->name,
               " has no multi-tensor path (use loop or auto)");
}

namespace {

void stepGroups(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                const DeviceSkip* skip) {
  impl = resolveOptimizerImpl(impl, kind);
  checkOptimizerImpl(impl, kind);
  if (impl == OptimizerImpl::kLoop) {
    if (!kind->loopStep) {
      optimizer.step();
      return;
    }
    for (auto& group : optimizer.param_groups()) kind->loopStep(optimizer, group);
    return;
  }
  size_t k = 0;
  for (auto& group : optimizer.param_groups()) {
    const double scale = skip && k < skip->scales.size() ? skip->scales[k] : 1.0;
    ++k;
    if (impl == OptimizerImpl::kFused) {
      kind->fusedStep(optimizer, group, skip, scale);
    } else {
      kind->foreachStep(optimizer, group);
    }
  }
}

}  // namespace

void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl) {
  stepGroups(optimizer, kind, impl, nullptr);
}

void optimizerStep(torch::optim::Optimizer& optimizer, OptimizerKind kind, OptimizerImpl impl,
                   const DeviceSkip& skip) {
  FIXRES_CHECK(resolveOptimizerImpl(impl, kind) == OptimizerImpl::kFused, UsageError,
               "a step skipped on the device needs a fused optimizer kernel");
  stepGroups(optimizer, kind, impl, &skip);
}

void rewindStepCounts(torch::optim::Optimizer& optimizer, OptimizerKind kind, int64_t skipped) {
  if (skipped == 0 || !kind->rewindStep) return;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (auto* s = parameterState(optimizer, p)) kind->rewindStep(*s, skipped);
}

}  // namespace fixres::optim
