// BatchNorm2d with an optional training-mode override; torch's BatchNorm2d otherwise.
#include "fixres/models/BatchNorm.h"

#include <torch/nn/functional/batchnorm.h>
#include <torch/nn/init.h>

#include "fixres/common/Error.h"

namespace fixres::models {

BatchNorm2dImpl::BatchNorm2dImpl(const torch::nn::BatchNorm2dOptions& o) : options(o) {
  reset();
}

void BatchNorm2dImpl::reset() {
  const int64_t c = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", torch::empty({c}));
    bias = register_parameter("bias", torch::empty({c}));
  } else {
    weight = register_parameter("weight", torch::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({c}));
    running_var = register_buffer("running_var", torch::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
  } else {
    running_mean = register_buffer("running_mean", torch::Tensor());
    running_var = register_buffer("running_var", torch::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", torch::Tensor());
  }
  reset_parameters();
}

void BatchNorm2dImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard noGrad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm2dImpl::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    torch::nn::init::ones_(weight);
    torch::nn::init::zeros_(bias);
  }
}

void BatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "BatchNorm2d(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

torch::Tensor BatchNorm2dImpl::forward(const torch::Tensor& input) {
  FIXRES_CHECK(input.dim() == 4, UsageError,
               "BatchNorm2d expects a 4-D input (N x C x H x W), got ", input.dim(), "-D");
  if (override_ && is_training()) return override_->forward(*this, input);
  // As torch::nn::BatchNorm2d.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
    num_batches_tracked += 1;
    if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();
  }
  return torch::nn::functional::detail::batch_norm(input, running_mean, running_var, weight, bias,
                                                   is_training() || !options.track_running_stats(),
                                                   factor, options.eps());
}

int setBatchNormOverride(torch::nn::Module& module, const std::shared_ptr<BatchNormOverride>& o) {
  int count = 0;
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (auto* bn = m->as<BatchNorm2dImpl>()) {
      bn->setTrainingOverride(o);
      ++count;
    }
  }
  return count;
}

}  // namespace fixres::models
