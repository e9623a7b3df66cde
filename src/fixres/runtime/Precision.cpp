// bf16 and fp16 autocast and channels-last, over the LibTorch 1.13 and 2.x autocast interfaces.
#include "fixres/runtime/Precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "fixres/common/Error.h"
#include "fixres/runtime/Numerics.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define FIXRES_AUTOCAST_BY_DEVICE 1
#endif

namespace fixres::engine {
namespace {

bool autocastEnabled(bool cuda) {
#ifdef FIXRES_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType autocastType(bool cuda) {
#ifdef FIXRES_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

void setAutocast(bool cuda, bool enabled, at::ScalarType type) {
#ifdef FIXRES_AUTOCAST_BY_DEVICE
  const auto dev = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(dev, type);
  at::autocast::set_autocast_enabled(dev, enabled);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(type);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(type);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

}  // namespace

Precision parsePrecision(const std::string& text, const torch::Device& device) {
  NumericsOptions o;
  o.precision = parseChoice(numericsChoices().precision, text, "--precision");
  return resolveNumerics(o, device).precision;
}

bool parseChannelsLast(const std::string& text, const torch::Device& device) {
  NumericsOptions o;
  o.memoryFormat = parseChoice(numericsChoices().memoryFormat, text, "--memory-format");
  return resolveNumerics(o, device).channelsLast;
}

const char* precisionName(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

void useChannelsLast(torch::nn::Module& model) {
  torch::NoGradGuard noGrad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  for (auto& b : model.buffers())
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
}

AutocastGuard::AutocastGuard(const torch::Device& device, Precision precision) {
  if (precision == Precision::kFp32) return;
  active_ = true;
  cuda_ = device.is_cuda();
  wasEnabled_ = autocastEnabled(cuda_);
  previousType_ = autocastType(cuda_);
  setAutocast(cuda_, true, precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  setAutocast(cuda_, wasEnabled_, previousType_);
}

}  // namespace fixres::engine
