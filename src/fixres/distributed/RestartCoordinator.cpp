// The launchers' store and the keys through which they agree on each generation's outcome.
#include "fixres/distributed/RestartCoordinator.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <sstream>
#include <thread>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"

namespace fixres::distributed {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kStorePoll = std::chrono::milliseconds(100);

std::vector<uint8_t> toBytes(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string toText(const std::vector<uint8_t>& b) {
  return {b.begin(), b.end()};
}

std::string encodeFailure(const RankFailure& f) {
  return detail::concat(f.node, " ", f.rank, " ", f.code, " ", f.restart ? 1 : 0);
}
RankFailure decodeFailure(const std::string& s) {
  RankFailure f;
  int restart = 0;
  std::istringstream in(s);
  in >> f.node >> f.rank >> f.code >> restart;
  FIXRES_CHECK(!in.fail(), DistributedError, "the launchers' store holds a bad failure record '", s,
               "'");
  f.restart = restart != 0;
  return f;
}

std::string generationKey(const char* what, int generation) {
  return detail::concat(what, "/", generation);
}

// One key per node under `prefix`: "<prefix>/0", "<prefix>/1", ...
std::vector<std::string> nodeKeys(const std::string& prefix, int nnodes) {
  std::vector<std::string> keys;
  for (int n = 0; n < nnodes; ++n) keys.push_back(detail::concat(prefix, "/", n));
  return keys;
}

SteadyClock::time_point deadlineAfter(double seconds) {
  return SteadyClock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

RestartCoordinator::RestartCoordinator(const CoordinatorOptions& options) : o_(options) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o_.timeoutSeconds * 1000));
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(o_.port);
    so.isServer = o_.nodeRank == 0;
    so.numWorkers = static_cast<size_t>(o_.nnodes);
    so.waitWorkers = false;  // the wait below names the nodes that do not come
    so.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(o_.masterAddr, so);
    store_ = c10::make_intrusive<c10d::PrefixStore>("fixres-launch", tcp);
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "launch: node ", o_.nodeRank, " cannot ",
                o_.nodeRank == 0 ? "serve" : "reach", " the launchers' store at ", where(),
                o_.nodeRank == 0 ? "" : " (served by the launcher of node 0)", " within ",
                o_.timeoutSeconds, " s: ", oneLine(e.what()).substr(0, 200));
  }
  std::vector<std::string> keys;
  for (int n = 0; n < o_.nnodes; ++n) keys.push_back(detail::concat("node/", n));
  try {
    store_->set(keys[static_cast<size_t>(o_.nodeRank)], toBytes(std::to_string(o_.maxRestarts)));
    store_->wait(keys, timeout);
  } catch (const std::exception& e) {
    std::string absent;
    try {
      absent = missing("node");
    } catch (const std::exception&) {
      absent = "0 (its store no longer answers)";
    }
    FIXRES_FAIL(DistributedError, "launch: node ", o_.nodeRank, ": the launchers of node(s) ",
                absent, " did not join at ", where(), " within ", o_.timeoutSeconds, " s");
  }
  // Every node reads every node's --max-restarts; node 0, which serves the store, leaves only
  // once all have read them (bounded), so that each can say whether they agree.
  std::string disagree;
  try {
    for (int n = 0; n < o_.nnodes; ++n) {
      const std::string theirs = toText(store_->get(keys[static_cast<size_t>(n)]));
      if (theirs != std::to_string(o_.maxRestarts) && disagree.empty())
        disagree = detail::concat(theirs, " on node ", n);
    }
    store_->set(detail::concat("read/", o_.nodeRank), toBytes("1"));
    if (o_.nodeRank == 0) {
      std::vector<std::string> read;
      for (int n = 0; n < o_.nnodes; ++n) read.push_back(detail::concat("read/", n));
      const auto deadline = SteadyClock::now() + timeout;
      while (!store_->check(read) && SteadyClock::now() < deadline)
        std::this_thread::sleep_for(kStorePoll);
    }
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "launch: node ", o_.nodeRank, " lost the launchers' store at ",
                where(), " while joining: ", oneLine(e.what()).substr(0, 160));
  }
  FIXRES_CHECK(disagree.empty(), UsageError, "--max-restarts ", o_.maxRestarts, " on node ",
               o_.nodeRank, " disagrees with ", disagree);
}

std::string RestartCoordinator::where() const {
  return detail::concat(o_.masterAddr, ":", o_.port);
}

std::string RestartCoordinator::missing(const std::string& keyPrefix) {
  std::string out;
  for (int n = 0; n < o_.nnodes; ++n)
    if (!store_->check({detail::concat(keyPrefix, "/", n)}))
      out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

std::optional<RankFailure> RestartCoordinator::announced(int generation) {
  try {
    if (!store_->check({generationKey("fail", generation)})) return std::nullopt;
    return decodeFailure(toText(store_->get(generationKey("fail", generation))));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "launch: node ", o_.nodeRank, " lost the launchers' store at ",
                where(), " (the launcher of node 0 is gone?): ", oneLine(e.what()).substr(0, 160));
  }
}

RankFailure RestartCoordinator::announce(int generation, const RankFailure& mine) {
  try {
    // The first failure announced counts for every node; later ones read it.
    if (store_->add(generationKey("failures", generation), 1) == 1) {
      store_->set(generationKey("fail", generation), toBytes(encodeFailure(mine)));
      return mine;
    }
    RankFailure first = decodeFailure(toText(store_->get(generationKey("fail", generation))));
    if (first.restart && !mine.restart) {
      store_->set(generationKey("abort", generation), toBytes(encodeFailure(mine)));
      return mine;
    }
    return first;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "launch: node ", o_.nodeRank,
                " cannot announce the failure of rank ", mine.rank, " to the launchers' store at ",
                where(), ": ", oneLine(e.what()).substr(0, 160));
  }
}

void RestartCoordinator::waitAllStopped(int generation, const std::function<bool()>& interrupted) {
  const std::string prefix = generationKey("stopped", generation);
  const auto keys = nodeKeys(prefix, o_.nnodes);
  const auto deadline = deadlineAfter(o_.timeoutSeconds);
  try {
    store_->set(keys[static_cast<size_t>(o_.nodeRank)], toBytes("1"));
    while (true) {
      if (store_->check({generationKey("abort", generation)})) {
        const RankFailure f =
            decodeFailure(toText(store_->get(generationKey("abort", generation))));
        FIXRES_FAIL(DistributedError, "launch: no restart: on node ", f.node, ", rank ", f.rank,
                    " exited with code ", f.code, ", which a restart cannot help");
      }
      if (store_->check(keys) || (interrupted && interrupted())) return;
      if (SteadyClock::now() > deadline)
        FIXRES_FAIL(DistributedError, "launch: no restart: the launchers of node(s) ",
                    missing(prefix), " did not stop their ranks within ", o_.timeoutSeconds, " s");
      std::this_thread::sleep_for(kStorePoll);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    FIXRES_FAIL(DistributedError, "launch: no restart: node ", o_.nodeRank,
                " lost the launchers' store at ", where(),
                " (the launcher of node 0 is gone?): ", oneLine(e.what()).substr(0, 160));
  }
}

std::optional<RankFailure> RestartCoordinator::waitAllDone(
    int generation, const std::function<bool()>& interrupted) {
  const std::string prefix = generationKey("done", generation);
  const auto keys = nodeKeys(prefix, o_.nnodes);
  const auto deadline = deadlineAfter(o_.timeoutSeconds);
  try {
    store_->set(keys[static_cast<size_t>(o_.nodeRank)], toBytes("1"));
    while (true) {
      if (auto f = announced(generation)) return f;
      if (store_->check(keys) || (interrupted && interrupted())) return std::nullopt;
      if (SteadyClock::now() > deadline) {
        log::warn("launch: the ranks of node(s) ", missing(prefix), " have not finished within ",
                  o_.timeoutSeconds, " s; the ranks of node ", o_.nodeRank, " all succeeded");
        return std::nullopt;
      }
      std::this_thread::sleep_for(kStorePoll);
    }
  } catch (const std::exception&) {
    return std::nullopt;  // node 0 left: it leaves only once every node is done or has failed
  }
}

void RestartCoordinator::leave() {
  const auto keys = nodeKeys("left", o_.nnodes);
  const auto deadline = deadlineAfter(o_.timeoutSeconds);
  try {
    store_->set(keys[static_cast<size_t>(o_.nodeRank)], toBytes("1"));
    if (o_.nodeRank != 0) return;
    while (!store_->check(keys) && SteadyClock::now() < deadline)
      std::this_thread::sleep_for(kStorePoll);
  } catch (const std::exception&) {
    // Leaving is best effort: the outcome is already decided.
  }
}

}  // namespace fixres::distributed
