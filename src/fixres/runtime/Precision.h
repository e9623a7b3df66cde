// Numeric precision and memory format of a run: fp32, bf16 autocast or fp16 autocast (CUDA only;
// training adds dynamic loss scaling, LossScaler.h), always with fp32 master weights; NCHW or
// channels-last. `auto` means bf16 + channels-last on CUDA and fp32 + NCHW on the CPU.
#pragma once

#include <torch/torch.h>

#include <string>

namespace fixres::engine {

enum class Precision { kFp32, kBf16, kFp16 };

// A --precision / --memory-format value resolved for `device` (see Numerics.h; UsageError
// naming the flag for an unknown value). parseChannelsLast is true for channels-last.
Precision parsePrecision(const std::string& text, const torch::Device& device);
bool parseChannelsLast(const std::string& text, const torch::Device& device);
const char* precisionName(Precision p);

// Converts the model's 4-d parameters and buffers to channels-last in place.
void useChannelsLast(torch::nn::Module& model);

// Enables autocast to bf16 (kBf16) or fp16 (kFp16) on the device type for its lifetime (and does
// nothing for kFp32); restores the previous state and clears the cast cache on exit, as
// Python's torch.autocast does.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, Precision precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool wasEnabled_ = false;
  at::ScalarType previousType_ = at::kFloat;
};

}  // namespace fixres::engine
