// Store creation (TCPStore or FileStore, under the job's prefix), the wait for every rank, and
// local address detection.
#include "fixres/distributed/Rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres::distributed {
namespace {

std::string storeAddress(const WorldInfo& w) {
  return w.store == StoreKind::kTcp ? w.masterAddr + ":" + std::to_string(w.masterPort)
                                    : w.storePath;
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
    FIXRES_FAIL(DistributedError, "rendezvous at ", storeAddress(w), " failed for rank ", w.rank,
                " of ", w.worldSize, " within ", w.timeoutSeconds,
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
      missing = "0 (its rendezvous store at " + storeAddress(w) + " no longer answers)";
    }
    FIXRES_FAIL(DistributedError, "rank ", w.rank, " of ", w.worldSize, ": rank(s) ",
                missing.empty() ? std::string("?") : missing, " did not join within ",
                w.timeoutSeconds, " s (", oneLine(e.what()).substr(0, 120), ")");
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Store> rendezvous(const WorldInfo& world) {
  // c10d's store client bounds neither its handshake nor a reply it waits for: a store port
  // held by another program (or a client that connected to its own port while rank 0 was not
  // yet listening) would hold this rank forever. The meeting runs on a thread of its own, and
  // this one gives up after both of its bounded waits (opening, every rank's arrival) and a
  // grace; the thread is left behind, and a DistributedError ends the process at once.
  using Task = std::packaged_task<c10::intrusive_ptr<c10d::Store>()>;
  auto task = std::make_shared<Task>([world] {
    auto store = makeStore(world);
    waitForAllRanks(*store, world);
    return store;
  });
  auto met = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  const double bound = 2 * world.timeoutSeconds + 10;
  if (met.wait_for(std::chrono::duration<double>(bound)) != std::future_status::ready) {
    FIXRES_FAIL(DistributedError, "rendezvous at ", storeAddress(world), " got no answer for rank ",
                world.rank, " of ", world.worldSize, " within ", bound,
                " s: is another program listening on that address?");
  }
  return met.get();
}

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

}  // namespace fixres::distributed
