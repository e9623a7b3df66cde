// The c10d communicator: collectives over a process group (Gloo on CPU, NCCL on CUDA) bounded by
// the job's timeout, with a liveness heartbeat in the rendezvous store so that a failed
// collective names the ranks that stopped answering.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/SharedMemoryAllReduce.h"
#include "fixres/distributed/World.h"

namespace fixres::distributed {

// The process groups this build has, for `fixres version`: "gloo" (when its headers were there
// at build time), "nccl <version>" (CUDA builds), comma-separated; "none" when neither.
std::string collectivesDescription();

class ProcessGroupCommunicator : public Communicator {
 public:
#if TORCH_VERSION_MAJOR >= 2
  using GroupBase = c10d::Backend;
#else
  using GroupBase = c10d::ProcessGroup;
#endif

  // Builds the process group of options.backend (auto: NCCL when options.cuda, else Gloo) over
  // `store`, where every rank of `world` has already arrived (see rendezvous()). Throws
  // UsageError when this build lacks the backend, DistributedError when the setup fails.
  static std::unique_ptr<ProcessGroupCommunicator> create(c10::intrusive_ptr<c10d::Store> store,
                                                          const WorldInfo& world,
                                                          const ConnectOptions& options);

  // `backend` is the name backendName() reports; `device` is where collective buffers live.
  // Starts this rank's heartbeat in `store` (a thread bumping a counter once a second).
  ProcessGroupCommunicator(c10::intrusive_ptr<GroupBase> group,
                           c10::intrusive_ptr<c10d::Store> store, const WorldInfo& world,
                           std::string backend, torch::Device device);
  ~ProcessGroupCommunicator() override;  // stops and joins the heartbeat

  int rank() const override {
    return world_.rank;
  }
  int worldSize() const override {
    return world_.worldSize;
  }
  std::string backendName() const override {
    return backend_;
  }
  torch::Device device() const override {
    return device_;
  }

  void broadcast(std::vector<torch::Tensor>& tensors, int root) override;
  std::unique_ptr<PendingOp> allReduceSumAsync(torch::Tensor& tensor) override;
  std::vector<torch::Tensor> allGather(const torch::Tensor& tensor) override;
  void barrier() override;

 private:
  class Liveness;

  // Launches a collective and waits for it; DistributedError (via fail) on any failure.
  template <typename F>
  void run(const char* what, F&& launch);
  void waitFor(const char* what, const c10::intrusive_ptr<c10d::Work>& work);
  // The all-reduce of a bfloat16 tensor on Gloo (which has no bfloat16 sum): an all-gather.
  std::unique_ptr<PendingOp> gatherSum(torch::Tensor& tensor);
  // Names the lost ranks (from the heartbeat) and throws DistributedError.
  [[noreturn]] void fail(const char* what, const std::string& cause);

  c10::intrusive_ptr<GroupBase> group_;
  torch::Device device_;
  WorldInfo world_;
  std::string backend_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Liveness> liveness_;
  // Every rank on this host, CPU: the all-reduce goes through shared memory (null otherwise).
  std::unique_ptr<SharedMemoryAllReduce> shm_;
};

}  // namespace fixres::distributed
