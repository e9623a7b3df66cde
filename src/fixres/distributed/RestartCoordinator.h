// How the launchers of a multi-node job (`fixres launch --nnodes N --max-restarts K`) agree on
// restarts: through a small c10d TCPStore that the launcher of node 0 serves at --master-port + 1
// for the whole job (the ranks' own store, served by rank 0, is gone when rank 0 dies). Every
// launcher announces its node, and the restart generation g (0 at the start, then 1, 2, ...) moves
// on only when every node has stopped its ranks of generation g, so all nodes count restarts
// alike. Every wait is bounded by the launch's --dist-timeout: a launcher that cannot reach the
// others ends with a DistributedError naming the nodes it waited for.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <optional>
#include <string>

namespace fixres::distributed {

// A failure one node saw in one generation, as announced to every node.
struct RankFailure {
  int node = 0;
  int rank = -1;         // global rank; -1: the launcher itself got a signal
  int code = 0;          // the rank's exit code (128 + signal when killed)
  bool restart = false;  // all nodes restart (else all stop)
};

struct CoordinatorOptions {
  std::string masterAddr;
  int port = 0;  // the launchers' store: --master-port + 1
  int nodeRank = 0;
  int nnodes = 1;
  int maxRestarts = 0;
  double timeoutSeconds = 300;
  std::string jobId;
};

class RestartCoordinator {
 public:
  // Opens (node 0: serves) the launchers' store and waits for every node's launcher. Throws
  // DistributedError naming the nodes that did not come within the timeout, UsageError when
  // the nodes disagree on --max-restarts.
  explicit RestartCoordinator(const CoordinatorOptions& options);

  // The failure announced for `generation`, if any (a quick store query). Throws
  // DistributedError when the store no longer answers (node 0's launcher is gone).
  std::optional<RankFailure> announced(int generation);

  // Announces this node's failure in `generation` and returns the one that counts: the first
  // announced (by any node). A node that cannot restart (its failure was not restartable) while
  // another announced a restart marks the generation aborted, so every node stops.
  RankFailure announce(int generation, const RankFailure& mine);

  // Both waits below poll the store every 100 ms and return early, within one poll, once
  // `interrupted` (when given) says so: a user's Ctrl-C must not wait for the timeout.

  // This node's ranks of `generation` are stopped: waits until every node's are, then the
  // next generation may start. Throws DistributedError when a node aborted the restart (naming
  // its failure) or did not stop within the timeout (naming it).
  void waitAllStopped(int generation, const std::function<bool()>& interrupted = {});

  // This node's ranks all succeeded in `generation`: waits until every node's did (nullopt) or
  // a failure is announced (returned: the ranks must restart with the others). A node whose
  // launcher cannot be reached any more (node 0 left after every node succeeded) counts as done.
  // Interrupted: nullopt.
  std::optional<RankFailure> waitAllDone(int generation,
                                         const std::function<bool()>& interrupted = {});

  // Before this launcher exits after a failure: node 0 serves the store until every node has
  // read the outcome (bounded by the timeout), so that none of them loses it.
  void leave();

  const CoordinatorOptions& options() const { return o_; }

 private:
  std::string where() const;
  std::string missing(const std::string& keyPrefix);

  CoordinatorOptions o_;
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace fixres::distributed
