// A single process: collectives without peers, so nothing to wait for.
#include "fixres/distributed/SingleProcessCommunicator.h"

namespace fixres::distributed {

std::unique_ptr<PendingOp> SingleProcessCommunicator::allReduceSumAsync(torch::Tensor&) {
  struct Done : PendingOp {
    void wait() override {}
  };
  return std::make_unique<Done>();
}

std::unique_ptr<Communicator> makeSingleProcessCommunicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace fixres::distributed
