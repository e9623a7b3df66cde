// The communicator of a job of one process: rank 0 of 1, every collective the identity, no
// store and no threads. What makeSingleProcessCommunicator() and connect() give a lone process.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "fixres/distributed/Communicator.h"

namespace fixres::distributed {

class SingleProcessCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string backendName() const override { return "none"; }
  void broadcast(std::vector<torch::Tensor>&, int) override {}
  // Already done: wait() returns at once and the tensor is left as it is.
  std::unique_ptr<PendingOp> allReduceSumAsync(torch::Tensor&) override;
  // A copy of the tensor: the contribution of the only rank.
  std::vector<torch::Tensor> allGather(const torch::Tensor& t) override { return {t.clone()}; }
  void barrier() override {}
};

}  // namespace fixres::distributed
