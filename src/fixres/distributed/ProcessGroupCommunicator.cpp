// Process-group construction (Gloo/NCCL), collectives bounded by the job's timeout, and the
// liveness heartbeat that turns a failed collective into the names of the lost ranks.
#include "fixres/distributed/ProcessGroupCommunicator.h"

#include "fixres/distributed/SharedMemoryAllReduce.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#if __has_include(<gloo/algorithm.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define FIXRES_HAVE_GLOO 1
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/distributed/Rendezvous.h"

namespace fixres::distributed {

// Each rank bumps its counter in the store every second; after a failed collective the
// counters that stopped moving name the lost ranks. The rank that hosts a TCP store (rank 0)
// publishes its verdict and keeps the store up until every rank it found alive has read it
// (bounded): a rank still blocked on rank 0 then names the rank that died, not rank 0, when rank
// 0's exit closes the store.
class ProcessGroupCommunicator::Liveness {
 public:
  Liveness(c10::intrusive_ptr<c10d::Store> store, int rank, int world)
      : store_(std::move(store)), rank_(rank), world_(world) {
    thread_ = std::thread([this] { run(); });
  }
  ~Liveness() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // The lost ranks' description; `lost` gets their numbers.
  std::string diagnose(std::vector<int>& lost) {
    try {
      std::vector<int64_t> before(world_), after(world_);
      for (int r = 0; r < world_; ++r) before[r] = store_->add(key(r), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      std::string names;
      for (int r = 0; r < world_; ++r) {
        if (r == rank_) continue;
        after[r] = store_->add(key(r), 0);
        if (after[r] == before[r]) {
          names += (names.empty() ? "" : ", ") + std::to_string(r);
          lost.push_back(r);
        }
      }
      return names.empty() ? "no rank identified as lost (all still alive: a timeout?)"
                           : "lost rank(s): " + names;
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> lock(verdictMutex_);
      if (!verdict_.empty()) return verdict_ + " (found by rank 0 before its store closed)";
      return "lost rank(s): 0 (its rendezvous store no longer answers)";
    }
  }

  // Rank 0 with the store in its process: publish the verdict, then wait until each rank not in
  // `lost` has read it, at most `bound`.
  void publish(const std::string& verdict, const std::vector<int>& lost,
               std::chrono::milliseconds bound) {
    try {
      store_->set(kVerdictKey, std::vector<uint8_t>(verdict.begin(), verdict.end()));
      const auto deadline = std::chrono::steady_clock::now() + bound;
      for (int r = 1; r < world_; ++r) {
        if (std::find(lost.begin(), lost.end(), r) != lost.end()) continue;
        while (store_->add(seenKey(r), 0) == 0 && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } catch (const std::exception&) {
      // The store is ours; nothing more can be done for the others.
    }
  }

 private:
  static constexpr const char* kVerdictKey = "fixres/lost-verdict";
  std::string key(int r) const { return "fixres/alive/" + std::to_string(r); }
  std::string seenKey(int r) const { return "fixres/lost-verdict-seen/" + std::to_string(r); }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool seen = false;
    while (!stop_) {
      try {
        store_->add(key(rank_), 1);
        if (!seen && rank_ != 0 && store_->check({kVerdictKey})) {
          const auto v = store_->get(kVerdictKey);
          {
            std::lock_guard<std::mutex> guard(verdictMutex_);
            verdict_.assign(v.begin(), v.end());
          }
          store_->add(seenKey(rank_), 1);
          seen = true;
        }
      } catch (const std::exception&) {
        return;  // the store is gone; the next collective reports it
      }
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_, world_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::mutex verdictMutex_;
  std::string verdict_;  // rank 0's, read from the store
};

std::string collectivesDescription() {
  std::string out;
#ifdef FIXRES_HAVE_GLOO
  out = "gloo";
#endif
#ifdef USE_C10D_NCCL
  out += (out.empty() ? "" : ", ") + std::string("nccl ") + c10d::getNcclVersion();
#endif
  return out.empty() ? "none" : out;
}

std::unique_ptr<ProcessGroupCommunicator> ProcessGroupCommunicator::create(
    c10::intrusive_ptr<c10d::Store> store, const WorldInfo& w, const ConnectOptions& options) {
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(w.timeoutSeconds * 1000));
  Backend backend = options.backend;
  if (backend == Backend::kAuto) backend = options.cuda ? Backend::kNccl : Backend::kGloo;
  log::debug("connecting rank ", w.rank, " of ", w.worldSize, " (", w.source, ")");
  try {
    if (backend == Backend::kNccl) {
#ifdef USE_C10D_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, w.rank, w.worldSize, opts);
      return std::make_unique<ProcessGroupCommunicator>(group, store, w, "nccl",
                                                        torch::Device(torch::kCUDA, w.localRank));
#else
      FIXRES_FAIL(UsageError, "--backend nccl: this build's LibTorch has no NCCL");
#endif
    }
#ifdef FIXRES_HAVE_GLOO
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    if (!options.networkInterface.empty()) {
      opts->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(options.networkInterface));
    } else if (w.store == StoreKind::kTcp) {
      std::string local = localAddressTowards(w.masterAddr, w.masterPort);
      opts->devices.push_back(local.empty()
                                  ? c10d::ProcessGroupGloo::createDefaultDevice()
                                  : c10d::ProcessGroupGloo::createDeviceForHostname(local));
    } else if (w.loopback) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    opts->threads = 2;
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, w.rank, w.worldSize, opts);
    auto comm = std::make_unique<ProcessGroupCommunicator>(group, store, w, "gloo", torch::kCPU);
    if (options.sharedMemory && w.localWorldSize == w.worldSize) {
      std::string whyNot;
      comm->shm_ = SharedMemoryAllReduce::create(*store, w.rank, w.worldSize, timeout, &whyNot);
      if (comm->shm_) {
        comm->backend_ = "gloo+shm";
      } else {
        log::warn("all-reduce through Gloo: no shared memory between the ranks (", whyNot, ")");
      }
    }
    return comm;
#else
    FIXRES_FAIL(UsageError, "--backend gloo: this build has no Gloo (install libgloo-dev)");
#endif
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "process group setup failed on rank ", w.rank, " of ",
                w.worldSize, ": ", oneLine(e.what()).substr(0, 200));
  }
}

ProcessGroupCommunicator::ProcessGroupCommunicator(c10::intrusive_ptr<GroupBase> group,
                                                   c10::intrusive_ptr<c10d::Store> store,
                                                   const WorldInfo& world, std::string backend,
                                                   torch::Device device)
    : group_(std::move(group)),
      device_(device),
      world_(world),
      backend_(std::move(backend)),
      timeout_(static_cast<int64_t>(world.timeoutSeconds * 1000)),
      liveness_(std::make_unique<Liveness>(std::move(store), world.rank, world.worldSize)) {}

ProcessGroupCommunicator::~ProcessGroupCommunicator() = default;

template <typename F>
void ProcessGroupCommunicator::run(const char* what, F&& launch) {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = launch();
  } catch (const std::exception& e) {
    fail(what, e.what());
  }
  waitFor(what, work);
}

void ProcessGroupCommunicator::waitFor(const char* what,
                                       const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    work->wait(timeout_);
  } catch (const std::exception& e) {
    fail(what, e.what());
  }
}

void ProcessGroupCommunicator::fail(const char* what, const std::string& cause) {
  std::vector<int> lost;
  std::string who = liveness_->diagnose(lost);
  if (world_.rank == 0 && world_.store == StoreKind::kTcp && !lost.empty())
    liveness_->publish(who, lost, std::min(timeout_, std::chrono::milliseconds(10000)));
  FIXRES_FAIL(DistributedError, what, " failed on rank ", world_.rank, " of ", world_.worldSize,
              ": ", who, " (", oneLine(cause).substr(0, 200), ")");
}

void ProcessGroupCommunicator::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  for (auto& t : tensors) {
    std::vector<at::Tensor> one{t};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = timeout_;
    run("broadcast", [&] { return group_->broadcast(one, opts); });
  }
}

std::unique_ptr<PendingOp> ProcessGroupCommunicator::allReduceSumAsync(torch::Tensor& tensor) {
  struct Op : PendingOp {
    ProcessGroupCommunicator* self;
    c10::intrusive_ptr<c10d::Work> work;
    void wait() override { self->waitFor("all-reduce", work); }
  };
  if (shm_ && SharedMemoryAllReduce::supports(tensor)) {
    struct Shm : PendingOp {
      ProcessGroupCommunicator* self;
      std::unique_ptr<PendingOp> inner;
      void wait() override {
        try {
          inner->wait();
        } catch (const std::exception& e) {
          self->fail("all-reduce", e.what());
        }
      }
    };
    auto op = std::make_unique<Shm>();
    op->self = this;
    op->inner = shm_->allReduceSumAsync(tensor);
    return op;
  }
  if (tensor.scalar_type() == torch::kBFloat16 && device_.is_cpu()) return gatherSum(tensor);
  auto op = std::make_unique<Op>();
  op->self = this;
  std::vector<at::Tensor> one{tensor};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = timeout_;
  try {
    op->work = group_->allreduce(one, opts);
  } catch (const std::exception& e) {
    fail("all-reduce", e.what());
  }
  return op;
}

std::unique_ptr<PendingOp> ProcessGroupCommunicator::gatherSum(torch::Tensor& tensor) {
  // Gloo has no bfloat16 reduction: gather every rank's values as raw bytes, then add them up in
  // float32 in rank order (the same sum on every rank) and round once to bfloat16.
  struct Op : PendingOp {
    ProcessGroupCommunicator* self;
    c10::intrusive_ptr<c10d::Work> work;
    torch::Tensor target;
    std::vector<std::vector<at::Tensor>> out{1};
    std::vector<at::Tensor> in;
    void wait() override {
      self->waitFor("all-reduce", work);
      torch::NoGradGuard noGrad;
      auto sum = torch::zeros(target.sizes(), target.options().dtype(torch::kFloat));
      for (auto& part : out[0]) sum.add_(part.view(torch::kBFloat16).view(target.sizes()));
      target.copy_(sum);
    }
  };
  auto op = std::make_unique<Op>();
  op->self = this;
  op->target = tensor;
  op->in.push_back(tensor.contiguous().view({-1}).view(torch::kByte));
  for (int r = 0; r < world_.worldSize; ++r) op->out[0].push_back(torch::empty_like(op->in[0]));
  c10d::AllgatherOptions opts;
  opts.timeout = timeout_;
  try {
    op->work = group_->allgather(op->out, op->in, opts);
  } catch (const std::exception& e) {
    fail("all-reduce", e.what());
  }
  return op;
}

std::vector<torch::Tensor> ProcessGroupCommunicator::allGather(const torch::Tensor& tensor) {
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < world_.worldSize; ++r) out[0].push_back(torch::empty_like(tensor));
  std::vector<at::Tensor> in{tensor.contiguous()};
  c10d::AllgatherOptions opts;
  opts.timeout = timeout_;
  run("all-gather", [&] { return group_->allgather(out, in, opts); });
  return out[0];
}

void ProcessGroupCommunicator::barrier() {
  // A tiny all-reduce rather than ProcessGroup::barrier: same semantics, honours our timeout
  // on every backend.
  auto t = torch::zeros({1}, torch::TensorOptions().device(device_));
  allReduceSum(t);
}

}  // namespace fixres::distributed
