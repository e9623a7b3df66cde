// SyncBatchNorm (--sync-bn): in training mode every BatchNorm2d normalises with the mean and
// variance of the global batch, the batches of all ranks together, as PyTorch's
// torch.nn.SyncBatchNorm: forward gathers each rank's (mean, sum of squared deviations, count)
// per channel and combines them exactly; backward all-reduces the per-channel sums of dy and
// dy x (x - mean) and applies the matching gradient. The weight and bias gradients stay local:
// the gradient all-reduce averages them with the others. Running statistics take the global mean
// and the unbiased global variance, so they are the same on every rank. Evaluation mode is torch's
// BatchNorm2d unchanged.
#pragma once

#include <torch/torch.h>

#include "fixres/distributed/Communicator.h"
#include "fixres/models/BatchNorm.h"

namespace fixres::engine {

class SyncBatchNorm : public models::BatchNormOverride {
 public:
  explicit SyncBatchNorm(distributed::Communicator& comm) : comm_(comm) {}
  // input N x C x H x W (checked by BatchNorm2d; N may differ between ranks, and be 0 on some).
  torch::Tensor forward(models::BatchNorm2dImpl& bn, const torch::Tensor& input) override;

 private:
  distributed::Communicator& comm_;
};

// Every BatchNorm2d of `model` synchronised over `comm`'s ranks (nothing changes for a single
// process); returns the number of layers.
int enableSyncBatchNorm(torch::nn::Module& model, distributed::Communicator& comm);

}  // namespace fixres::engine
