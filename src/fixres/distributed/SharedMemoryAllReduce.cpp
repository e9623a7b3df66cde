// Shared-memory all-reduce between the ranks of one host.
#include "fixres/distributed/SharedMemoryAllReduce.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fixres/common/Log.h"

namespace fixres::distributed {
// A named namespace, not an anonymous one: Impl's members hold these types, and GCC warns
// (-Wsubobject-linkage) when a class with a field of an anonymous namespace's type is compiled in
// a unity file, which includes this one. Inline: found unqualified, as they were.
inline namespace shm_internal {

// The head of each rank's segment; the two data areas follow at kDataOffset. Counters only grow:
// `arrived` = the last chunk whose data this rank has copied in, `reduced` = the last chunk whose
// slice it has summed and published. `wake` changes after every counter update: the peers sleep
// on it (a futex in shared memory) instead of polling, so that a waiting rank takes no CPU from
// the ranks still computing.
struct alignas(64) SegmentHeader {
  std::atomic<uint64_t> arrived;
  char pad1[56];
  std::atomic<uint64_t> reduced;
  char pad2[56];
  int64_t pid;
  char pad3[56];
  std::atomic<uint32_t> wake;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is 32 bits");

// Futex on a word of a MAP_SHARED mapping (no FUTEX_PRIVATE_FLAG: the waiters are in other
// processes). Wait returns on a wake, a changed word, a signal or the timeout; callers re-check.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::microseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000),
              static_cast<long>((timeout.count() % 1000000) * 1000)};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Publishes a counter and wakes the peers sleeping on this segment.
void publish(SegmentHeader* h, std::atomic<uint64_t>& counter, uint64_t seq) {
  counter.store(seq, std::memory_order_release);
  h->wake.fetch_add(1, std::memory_order_acq_rel);
  futexWakeAll(&h->wake);
}
constexpr size_t kDataOffset = 4096;

struct Segment {
  std::string name;
  void* base = MAP_FAILED;
  size_t bytes = 0;
  SegmentHeader* header() const { return static_cast<SegmentHeader*>(base); }
  char* area(int which, size_t chunkBytes) const {
    return static_cast<char*>(base) + kDataOffset + which * chunkBytes;
  }
};

std::string randomName(int rank) {
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "/fixres-%d-%d-%08x%08x", static_cast<int>(::getpid()), rank, rd(),
                rd());
  return buf;
}

struct Op {
  torch::Tensor tensor;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::string error;
};

class PendingShm : public PendingOp {
 public:
  explicit PendingShm(std::shared_ptr<Op> op) : op_(std::move(op)) {}
  void wait() override {
    std::unique_lock<std::mutex> lock(op_->mutex);
    op_->cv.wait(lock, [&] { return op_->done; });
    if (!op_->error.empty()) throw std::runtime_error(op_->error);
  }

 private:
  std::shared_ptr<Op> op_;
};

}  // namespace shm_internal

class SharedMemoryAllReduce::Impl {
 public:
  Impl(int rank, int world, std::chrono::milliseconds timeout, size_t chunkBytes)
      : rank_(rank), world_(world), timeout_(timeout), chunkBytes_(chunkBytes) {}

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (auto& s : segments_)
      if (s.base != MAP_FAILED) ::munmap(s.base, s.bytes);
  }

  // This rank's segment: created, sized (reserved, so that a full /dev/shm fails here rather
  // than with SIGBUS later) and mapped. Returns "" or the reason it failed.
  std::string createOwn() {
    Segment& s = segments_[rank_];
    s.name = randomName(rank_);
    s.bytes = kDataOffset + 2 * chunkBytes_;
    int fd = ::shm_open(s.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return std::string("shm_open: ") + std::strerror(errno);
    int err = ::posix_fallocate(fd, 0, static_cast<off_t>(s.bytes));
    if (err != 0) {
      ::close(fd);
      ::shm_unlink(s.name.c_str());
      return std::string("cannot reserve ") + std::to_string(s.bytes >> 20) +
             " MB in /dev/shm: " + std::strerror(err);
    }
    s.base = ::mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (s.base == MAP_FAILED) {
      ::shm_unlink(s.name.c_str());
      return std::string("mmap: ") + std::strerror(errno);
    }
    auto* h = new (s.base) SegmentHeader();
    h->arrived.store(0);
    h->reduced.store(0);
    h->wake.store(0);
    h->pid = ::getpid();
    return "";
  }

  std::string mapPeer(int r, const std::string& name) {
    Segment& s = segments_[r];
    s.name = name;
    s.bytes = kDataOffset + 2 * chunkBytes_;
    int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0)
      return "shm_open of rank " + std::to_string(r) + "'s segment: " + std::strerror(errno);
    s.base = ::mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (s.base == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    return "";
  }

  void unlinkOwn() { ::shm_unlink(segments_[rank_].name.c_str()); }

  void start() {
    thread_ = std::thread([this] { loop(); });
  }

  std::unique_ptr<PendingOp> enqueue(const torch::Tensor& tensor) {
    auto op = std::make_shared<Op>();
    op->tensor = tensor;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(op);
    }
    cv_.notify_one();
    return std::make_unique<PendingShm>(op);
  }

  std::vector<Segment> segments_{};
  int rank_, world_;

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Op> op;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) {
          for (auto& q : queue_) finish(*q, "the communicator was shut down");
          return;
        }
        op = queue_.front();
        queue_.pop_front();
      }
      std::string error = broken_;
      if (error.empty()) {
        try {
          run(op->tensor);
        } catch (const std::exception& e) {
          error = broken_ = e.what();
        }
      }
      finish(*op, error);
    }
  }

  static void finish(Op& op, const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(op.mutex);
      op.done = true;
      op.error = error;
    }
    op.cv.notify_all();
  }

  // Waits until every rank's counter (arrived or reduced) reaches `seq`: a few yields (the peer
  // is often about to arrive), then sleeps on the peer's futex word, checking every 20 ms
  // whether the peer's process still exists and whether the wait has run past the timeout.
  void waitAll(bool reduced, uint64_t seq) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < world_; ++r) {
      SegmentHeader* h = segments_[r].header();
      auto& counter = reduced ? h->reduced : h->arrived;
      int spins = 0;
      while (counter.load(std::memory_order_acquire) < seq) {
        if (++spins < 50) {
          std::this_thread::yield();
          continue;
        }
        const uint32_t seen = h->wake.load(std::memory_order_acquire);
        if (counter.load(std::memory_order_acquire) >= seq) break;
        futexWait(&h->wake, seen, std::chrono::milliseconds(20));
        if (counter.load(std::memory_order_acquire) >= seq) break;
        const auto now = std::chrono::steady_clock::now();
        if (stopping()) throw std::runtime_error("the communicator was shut down");
        const int64_t pid = h->pid;
        if (pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
          throw std::runtime_error("rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
                                   ") exited during a shared-memory all-reduce");
        if (now - start > timeout_)
          throw std::runtime_error("rank " + std::to_string(r) +
                                   " did not answer a shared-memory all-reduce within the timeout");
      }
    }
  }

  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }

  void run(const torch::Tensor& tensor) {
    torch::NoGradGuard noGrad;
    const size_t elem = tensor.element_size();
    const int64_t total = tensor.numel();
    const int64_t perChunk = static_cast<int64_t>(chunkBytes_ / elem);
    char* data = static_cast<char*>(tensor.data_ptr());
    const auto options = torch::TensorOptions().dtype(tensor.scalar_type());
    for (int64_t begin = 0; begin < total; begin += perChunk) {
      const int64_t n = std::min(perChunk, total - begin);
      const uint64_t seq = ++seq_;
      const int area = static_cast<int>(seq % 2);
      // The area was last used by chunk seq - 2; every rank is done reading it once it has
      // copied in chunk seq - 1.
      if (seq > 1) waitAll(false, seq - 1);
      Segment& own = segments_[rank_];
      std::memcpy(own.area(area, chunkBytes_), data + begin * elem, n * elem);
      publish(own.header(), own.header()->arrived, seq);
      waitAll(false, seq);
      // This rank's slice of the chunk, summed over the ranks in rank order.
      auto sliceOf = [&](int r) {
        const int64_t lo = n * r / world_, hi = n * (r + 1) / world_;
        return std::make_pair(lo, hi - lo);
      };
      const auto slice = sliceOf(rank_);
      const int64_t lo = slice.first, len = slice.second;  // plain names: lambdas capture them
      if (len > 0) {
        auto out = torch::from_blob(data + (begin + lo) * elem, {len}, options);
        auto part = [&](int r) {
          return torch::from_blob(segments_[r].area(area, chunkBytes_) + lo * elem, {len}, options);
        };
        // Rank order: ((part 0 + part 1) + part 2) + ..., the first sum in one pass.
        if (world_ > 1) torch::add_out(out, part(0), part(1));
        for (int r = 2; r < world_; ++r) out.add_(part(r));
        std::memcpy(own.area(area, chunkBytes_) + lo * elem, out.data_ptr(), len * elem);
      }
      publish(own.header(), own.header()->reduced, seq);
      waitAll(true, seq);
      for (int r = 0; r < world_; ++r) {
        if (r == rank_) continue;
        const auto [rlo, rlen] = sliceOf(r);
        if (rlen > 0)
          std::memcpy(data + (begin + rlo) * elem,
                      segments_[r].area(area, chunkBytes_) + rlo * elem, rlen * elem);
      }
    }
  }

  std::chrono::milliseconds timeout_;
  size_t chunkBytes_;
  uint64_t seq_ = 0;
  std::string broken_;  // after a failure every later operation fails alike
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Op>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

SharedMemoryAllReduce::SharedMemoryAllReduce(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedMemoryAllReduce::~SharedMemoryAllReduce() = default;

bool SharedMemoryAllReduce::supports(const torch::Tensor& t) {
  const auto s = t.scalar_type();
  return t.device().is_cpu() && t.is_contiguous() &&
         (s == torch::kFloat || s == torch::kDouble || s == torch::kHalf || s == torch::kBFloat16);
}

std::unique_ptr<SharedMemoryAllReduce> SharedMemoryAllReduce::create(
    c10d::Store& store, int rank, int world, std::chrono::milliseconds timeout, std::string* whyNot,
    size_t chunkBytes) {
  auto impl = std::make_unique<Impl>(rank, world, timeout, chunkBytes);
  impl->segments_.resize(world);
  std::string error = impl->createOwn();
  auto key = [](int r) { return "fixres/shm/" + std::to_string(r); };
  const std::string mine = error.empty() ? impl->segments_[rank].name : "!" + error;
  store.set(key(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  // Every rank reads every name: all agree on whether the path is usable.
  std::vector<std::string> names(world);
  for (int r = 0; r < world; ++r) {
    auto v = store.get(key(r));
    names[r].assign(v.begin(), v.end());
    if (!names[r].empty() && names[r][0] == '!' && error.empty())
      error = "rank " + std::to_string(r) + ": " + names[r].substr(1);
  }
  for (int r = 0; r < world && error.empty(); ++r)
    if (r != rank) error = impl->mapPeer(r, names[r]);
  // Every rank has mapped (or given up) before any segment is unlinked.
  const std::string verdict = error.empty() ? "ok" : "!" + error;
  store.set(key(rank) + "/mapped", std::vector<uint8_t>(verdict.begin(), verdict.end()));
  for (int r = 0; r < world; ++r) {
    auto v = store.get(key(r) + "/mapped");
    std::string s(v.begin(), v.end());
    if (s != "ok" && error.empty()) error = "rank " + std::to_string(r) + ": " + s.substr(1);
  }
  if (impl->segments_[rank].base != MAP_FAILED) impl->unlinkOwn();
  if (!error.empty()) {
    if (whyNot) *whyNot = error;
    return nullptr;
  }
  impl->start();
  return std::unique_ptr<SharedMemoryAllReduce>(new SharedMemoryAllReduce(std::move(impl)));
}

std::unique_ptr<PendingOp> SharedMemoryAllReduce::allReduceSumAsync(const torch::Tensor& tensor) {
  return impl_->enqueue(tensor);
}

}  // namespace fixres::distributed
