// Single-process and c10d communicators, rendezvous through TCPStore/FileStore, and the
// liveness record that lets a failed collective name the ranks that stopped answering.
#include "fixres/distributed/Communicator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/version.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

#if __has_include(<gloo/algorithm.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define FIXRES_HAVE_GLOO 1
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"

namespace fixres::distributed {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

using Clock = std::chrono::steady_clock;

class SingleProcessCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string backendName() const override { return "none"; }
  void broadcast(std::vector<torch::Tensor>&, int) override {}
  std::unique_ptr<PendingOp> allReduceSumAsync(torch::Tensor&) override {
    struct Done : PendingOp {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  std::vector<torch::Tensor> allGather(const torch::Tensor& t) override { return {t.clone()}; }
  void barrier() override {}
};

// Each rank bumps its counter in the store every second; after a failed collective the
// counters that stopped moving name the lost ranks.
class Liveness {
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

  std::string diagnose() {
    try {
      std::vector<int64_t> before(world_), after(world_);
      for (int r = 0; r < world_; ++r) before[r] = store_->add(key(r), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      std::string lost;
      for (int r = 0; r < world_; ++r) {
        if (r == rank_) continue;
        after[r] = store_->add(key(r), 0);
        if (after[r] == before[r]) lost += (lost.empty() ? "" : ", ") + std::to_string(r);
      }
      return lost.empty() ? "no rank identified as lost (all still alive: a timeout?)"
                          : "lost rank(s): " + lost;
    } catch (const std::exception&) {
      return "lost rank(s): 0 (its rendezvous store no longer answers)";
    }
  }

 private:
  std::string key(int r) const { return "fixres/alive/" + std::to_string(r); }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      try {
        store_->add(key(rank_), 1);
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
};

class GroupCommunicator : public Communicator {
 public:
  GroupCommunicator(c10::intrusive_ptr<GroupBase> group, c10::intrusive_ptr<c10d::Store> store,
                    const WorldInfo& world, std::string backend, torch::Device device)
      : group_(std::move(group)),
        device_(device),
        world_(world),
        backend_(std::move(backend)),
        timeout_(static_cast<int64_t>(world.timeoutSeconds * 1000)),
        liveness_(std::make_unique<Liveness>(std::move(store), world.rank, world.worldSize)) {}

  int rank() const override { return world_.rank; }
  int worldSize() const override { return world_.worldSize; }
  std::string backendName() const override { return backend_; }
  torch::Device device() const override { return device_; }

  void broadcast(std::vector<torch::Tensor>& tensors, int root) override {
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      opts.timeout = timeout_;
      run("broadcast", [&] { return group_->broadcast(one, opts); });
    }
  }

  std::unique_ptr<PendingOp> allReduceSumAsync(torch::Tensor& tensor) override {
    struct Op : PendingOp {
      GroupCommunicator* self;
      c10::intrusive_ptr<c10d::Work> work;
      void wait() override { self->waitFor("all-reduce", work); }
    };
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

  std::vector<torch::Tensor> allGather(const torch::Tensor& tensor) override {
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < world_.worldSize; ++r) out[0].push_back(torch::empty_like(tensor));
    std::vector<at::Tensor> in{tensor.contiguous()};
    c10d::AllgatherOptions opts;
    opts.timeout = timeout_;
    run("all-gather", [&] { return group_->allgather(out, in, opts); });
    return out[0];
  }

  void barrier() override {
    // A tiny all-reduce rather than ProcessGroup::barrier: same semantics, honours our timeout
    // on every backend.
    auto t = torch::zeros({1}, torch::TensorOptions().device(device_));
    allReduceSum(t);
  }

  template <typename F>
  void run(const char* what, F&& launch) {
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = launch();
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
    waitFor(what, work);
  }

  void waitFor(const char* what, const c10::intrusive_ptr<c10d::Work>& work) {
    try {
      work->wait(timeout_);
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }

  [[noreturn]] void fail(const char* what, const std::string& cause) {
    std::string who = liveness_->diagnose();
    FIXRES_FAIL(DistributedError, what, " failed on rank ", world_.rank, " of ", world_.worldSize,
                ": ", who, " (", oneLine(cause).substr(0, 200), ")");
  }

 private:
  c10::intrusive_ptr<GroupBase> group_;
  torch::Device device_;
  WorldInfo world_;
  std::string backend_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Liveness> liveness_;
};

// The local address that routes to `host`: what Gloo must bind so that peers can reach us.
std::string localAddressTowards(const std::string& host, int port) {
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &dst.sin_addr) != 1) return "";
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "";
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0) {
    sockaddr_in self{};
    socklen_t len = sizeof(self);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) {
      char buf[INET_ADDRSTRLEN];
      if (inet_ntop(AF_INET, &self.sin_addr, buf, sizeof(buf))) out = buf;
    }
  }
  ::close(fd);
  return out;
}

c10::intrusive_ptr<c10d::Store> makeStore(const WorldInfo& w) {
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(w.timeoutSeconds * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  try {
    if (w.store == StoreKind::kTcp) {
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<uint16_t>(w.masterPort);
      opts.isServer = (w.rank == 0);
      opts.numWorkers = static_cast<size_t>(w.worldSize);
      opts.waitWorkers = false;  // waitForAllRanks names the ranks that do not come
      opts.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(w.masterAddr, opts);
    } else if (w.store == StoreKind::kFile) {
      store = c10::make_intrusive<c10d::FileStore>(w.storePath, w.worldSize);
      store->setTimeout(timeout);
    } else {
      FIXRES_FAIL(UsageError, "no rendezvous configured for a world of ", w.worldSize);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string where = w.store == StoreKind::kTcp
                            ? w.masterAddr + ":" + std::to_string(w.masterPort)
                            : w.storePath;
    FIXRES_FAIL(DistributedError, "rendezvous at ", where, " failed for rank ", w.rank, " of ",
                w.worldSize, " within ", w.timeoutSeconds,
                " s: ", oneLine(e.what()).substr(0, 200));
  }
  // Keys of this job only: a reused FileStore or store port cannot mix two jobs.
  return c10::make_intrusive<c10d::PrefixStore>("fixres/" + w.jobId, store);
}

// Every rank announces itself and waits for the others, so that a rank that never comes is
// named (the process-group constructor would only say "Socket Timeout").
void waitForAllRanks(c10d::Store& store, const WorldInfo& w) {
  auto key = [](int r) { return "fixres/arrived/" + std::to_string(r); };
  std::vector<std::string> keys;
  for (int r = 0; r < w.worldSize; ++r) keys.push_back(key(r));
  try {
    store.set(key(w.rank), std::vector<uint8_t>{1});
    store.wait(keys, std::chrono::milliseconds(static_cast<int64_t>(w.timeoutSeconds * 1000)));
  } catch (const std::exception& e) {
    std::string missing;
    try {
      for (int r = 0; r < w.worldSize; ++r)
        if (!store.check({key(r)})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    } catch (const std::exception&) {
      missing = "0 (its rendezvous store no longer answers)";
    }
    FIXRES_FAIL(DistributedError, "rank ", w.rank, " of ", w.worldSize, ": rank(s) ",
                missing.empty() ? std::string("?") : missing, " did not join within ",
                w.timeoutSeconds, " s (", oneLine(e.what()).substr(0, 120), ")");
  }
}

}  // namespace

Backend parseBackend(const std::string& name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "gloo") return Backend::kGloo;
  if (name == "nccl") return Backend::kNccl;
  FIXRES_FAIL(UsageError, "--backend must be auto, gloo or nccl, got '", name, "'");
}

std::unique_ptr<Communicator> makeSingleProcessCommunicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

std::unique_ptr<Communicator> connect(const WorldInfo& w, const ConnectOptions& options) {
  if (!w.distributed()) return makeSingleProcessCommunicator();
  auto store = makeStore(w);
  waitForAllRanks(*store, w);
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
      return std::make_unique<GroupCommunicator>(group, store, w, "nccl",
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
    return std::make_unique<GroupCommunicator>(group, store, w, "gloo", torch::kCPU);
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

torch::Tensor allGatherVariable(Communicator& comm, const torch::Tensor& tensor) {
  if (comm.worldSize() == 1) return tensor.clone();
  auto count = torch::full({1}, tensor.size(0), torch::dtype(torch::kLong).device(tensor.device()));
  auto counts = comm.allGather(count);
  int64_t maxCount = 0;
  for (auto& c : counts) maxCount = std::max(maxCount, c.item<int64_t>());
  auto shape = tensor.sizes().vec();
  shape[0] = maxCount;
  auto padded = torch::zeros(shape, tensor.options());
  if (tensor.size(0) > 0) padded.narrow(0, 0, tensor.size(0)).copy_(tensor);
  auto parts = comm.allGather(padded);
  std::vector<torch::Tensor> trimmed;
  for (size_t r = 0; r < parts.size(); ++r) {
    trimmed.push_back(parts[r].narrow(0, 0, counts[r].item<int64_t>()));
  }
  return torch::cat(trimmed, 0);
}

std::vector<double> allReduceScalars(Communicator& comm, const std::vector<double>& values) {
  if (comm.worldSize() == 1 || values.empty()) return values;
  auto t = torch::tensor(values, torch::kDouble).to(comm.device());
  comm.allReduceSum(t);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

}  // namespace fixres::distributed
