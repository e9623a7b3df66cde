// The narrow interface the training loop sees: collectives over the ranks of the job, with a
// single-process implementation (no store, no threads) and a c10d one (Gloo on CPU, NCCL on
// CUDA). Every failure of a peer (lost connection, timeout) raises DistributedError naming the
// ranks that stopped answering, within the configured timeout.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/distributed/World.h"

namespace fixres::distributed {

// A collective in flight; wait() returns when it is done or throws DistributedError.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual std::string backendName() const = 0;
  // Where collective buffers must live (CUDA for NCCL, CPU otherwise).
  virtual torch::Device device() const { return torch::kCPU; }

  // In place; tensors must be contiguous and of the same shapes on every rank.
  virtual void broadcast(std::vector<torch::Tensor>& tensors, int root) = 0;
  virtual std::unique_ptr<PendingOp> allReduceSumAsync(torch::Tensor& tensor) = 0;
  void allReduceSum(torch::Tensor& tensor) { allReduceSumAsync(tensor)->wait(); }
  // Same shape on every rank -> worldSize tensors, in rank order.
  virtual std::vector<torch::Tensor> allGather(const torch::Tensor& tensor) = 0;
  virtual void barrier() = 0;
};

enum class Backend { kAuto, kGloo, kNccl };
// The name of each backend as the CLI spells it: auto, gloo, nccl (in that order).
const ChoiceTable<Backend>& backendNames();     // auto, gloo, nccl
Backend parseBackend(const std::string& name);  // a name of backendNames() (UsageError otherwise)

struct ConnectOptions {
  Backend backend = Backend::kAuto;  // auto: NCCL when the tensors live on CUDA, else Gloo
  bool cuda = false;                 // tensors on the GPU of the local rank
  std::string networkInterface;      // Gloo: bind to this interface (GLOO_SOCKET_IFNAME)
  // CPU, every rank on this host: all-reduce through shared memory (SharedMemoryAllReduce.h)
  // rather than Gloo's loopback TCP.
  bool sharedMemory = true;
};

// Single process: every collective is the identity.
std::unique_ptr<Communicator> makeSingleProcessCommunicator();

// Rendezvous through the world's store and build the process group; DistributedError when the
// peers do not all arrive within the timeout.
std::unique_ptr<Communicator> connect(const WorldInfo& world, const ConnectOptions& options);

// Gathers tensors whose first dimension differs between ranks (same trailing shape), in rank
// order, concatenated along dim 0.
torch::Tensor allGatherVariable(Communicator& comm, const torch::Tensor& tensor);

// Sum a few scalars (counts, loss sums) over the ranks: exact metrics over uneven shards.
std::vector<double> allReduceScalars(Communicator& comm, const std::vector<double>& values);

}  // namespace fixres::distributed
