// Synchronised BatchNorm: global statistics in forward, the matching all-reduce in backward.
#include "fixres/step/SyncBatchNorm.h"

#include <memory>

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Per channel, shaped to broadcast against N x C x H x W.
torch::Tensor channels(const torch::Tensor& t) {
  return t.view({1, -1, 1, 1});
}

struct SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
  // x N x C x H x W; weight, bias C (or undefined); mean, invstd C (the global statistics,
  // float32); count: images x H x W over every rank.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& mean, const torch::Tensor& invstd, double count,
                               distributed::Communicator* comm) {
    ctx->save_for_backward({x, weight, mean, invstd});
    ctx->saved_data["count"] = count;
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    auto xf = x.to(torch::kFloat);
    auto y = (xf - channels(mean)) * channels(invstd);
    if (weight.defined()) y = y * channels(weight.to(torch::kFloat));
    if (bias.defined()) y = y + channels(bias.to(torch::kFloat));
    return y.to(x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list gradOutputs) {
    auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto& mean = saved[2];
    const auto& invstd = saved[3];
    const double count = ctx->saved_data["count"].toDouble();
    auto* comm = reinterpret_cast<distributed::Communicator*>(ctx->saved_data["comm"].toInt());
    const int64_t c = mean.numel();
    auto dy = gradOutputs[0].to(torch::kFloat);
    auto xmu = x.to(torch::kFloat) - channels(mean);
    const std::vector<int64_t> dims{0, 2, 3};
    auto sumDy = dy.sum(dims);
    auto sumDyXmu = (dy * xmu).sum(dims);
    torch::Tensor gradWeight, gradBias;
    if (weight.defined()) gradWeight = (sumDyXmu * invstd).to(weight.scalar_type());
    if (ctx->needs_input_grad(2))
      gradBias = sumDy.to(weight.defined() ? weight.scalar_type() : x.scalar_type());
    // The sums over the global batch, in one all-reduce.
    auto sums = torch::cat({sumDy, sumDyXmu});
    comm->allReduceSum(sums);
    auto meanDy = sums.narrow(0, 0, c) / count;
    auto meanDyXmu = sums.narrow(0, c, c) / count;
    auto scale = weight.defined() ? invstd * weight.to(torch::kFloat) : invstd;
    auto dx =
        (dy - channels(meanDy) - xmu * channels(invstd * invstd * meanDyXmu)) * channels(scale);
    return {dx.to(x.scalar_type()), gradWeight,      gradBias,       torch::Tensor(),
            torch::Tensor(),        torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor SyncBatchNorm::forward(models::BatchNorm2dImpl& bn, const torch::Tensor& input) {
  const auto& o = bn.options;
  const int64_t c = input.size(1);
  // The exponential average factor, as torch's BatchNorm (momentum nullopt: cumulative average).
  double factor = o.momentum().value_or(0.0);
  if (o.track_running_stats() && bn.num_batches_tracked.defined()) {
    torch::NoGradGuard noGrad;
    bn.num_batches_tracked += 1;
    if (!o.momentum()) factor = 1.0 / bn.num_batches_tracked.item<double>();
  }
  torch::Tensor mean, invstd, unbiasedVar;
  double count = 0;
  {
    torch::NoGradGuard noGrad;
    // This rank's mean and sum of squared deviations per channel (two passes), then every
    // rank's, combined exactly (Chan et al.): no loss of precision from sums of squares.
    auto xf = input.detach().to(torch::kFloat);
    const double n = static_cast<double>(input.numel() / std::max<int64_t>(c, 1));
    const std::vector<int64_t> dims{0, 2, 3};
    auto localMean = n > 0 ? xf.mean(dims) : torch::zeros({c});
    auto localM2 = n > 0 ? (xf - channels(localMean)).pow(2).sum(dims) : torch::zeros({c});
    auto packed = torch::cat({localMean.to(torch::kDouble), localM2.to(torch::kDouble),
                              torch::full({1}, n, torch::kDouble)});
    auto all = comm_.worldSize() > 1 ? comm_.allGather(packed) : std::vector<torch::Tensor>{packed};
    auto stacked = torch::stack(all);  // ranks x (2C + 1)
    auto means = stacked.narrow(1, 0, c), m2s = stacked.narrow(1, c, c);
    auto counts = stacked.narrow(1, 2 * c, 1);  // ranks x 1
    count = counts.sum().item<double>();
    FIXRES_CHECK(count > 1, DataError,
                 "SyncBatchNorm needs more than one value per channel over all ranks, got ", count);
    auto globalMean = (means * counts).sum(0) / count;
    auto m2 = (m2s + counts * (means - globalMean).pow(2)).sum(0);
    auto var = m2 / count;
    mean = globalMean.to(torch::kFloat);
    invstd = (var + o.eps()).rsqrt().to(torch::kFloat);
    unbiasedVar = m2 / (count - 1);
    if (o.track_running_stats() && bn.running_mean.defined()) {
      bn.running_mean.mul_(1 - factor).add_(globalMean.to(bn.running_mean.scalar_type()), factor);
      bn.running_var.mul_(1 - factor).add_(unbiasedVar.to(bn.running_var.scalar_type()), factor);
    }
  }
  return SyncBatchNormFunction::apply(input, bn.weight, bn.bias, mean, invstd, count, &comm_);
}

int enableSyncBatchNorm(torch::nn::Module& model, distributed::Communicator& comm) {
  if (comm.worldSize() == 1) return 0;
  return models::setBatchNormOverride(model, std::make_shared<SyncBatchNorm>(comm));
}

}  // namespace fixres::engine
