// `fixres launch`: starts the local ranks of a job with a torchrun-style environment, prefixes
// their output with the rank, forwards SIGINT/SIGTERM/SIGHUP, and when one rank fails stops the
// others and returns that rank's exit code -- or, with maxRestarts > 0, starts every rank again
// (on every node, agreed through RestartCoordinator) up to maxRestarts times. On one node the ranks
// meet in a private folder that the launcher removes on every exit it sees; the folders of
// launchers killed with SIGKILL are removed by the next launch.
#pragma once

#include <string>
#include <vector>

namespace fixres::distributed {

struct LaunchOptions {
  int nprocPerNode = 1;
  int nnodes = 1;
  int nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;                  // 0: a free local port (single node only)
  std::string jobId;                   // FIXRES_JOB_ID of the ranks; empty: not set (the ranks'
                                       // own --job-id, else "local", as for a lone run)
  double graceSeconds = 10;            // SIGTERM -> SIGKILL delay when stopping ranks
  int maxRestarts = 0;                 // restarts of every rank after a failure, in [0, 1000]
  double timeoutSeconds = 300;         // several nodes with restarts: the launchers' waits
  std::string executable;              // path of the program to start (argv[0]): fixres itself or
                                       // another program, checked by the caller; no PATH lookup
  std::vector<std::string> arguments;  // its arguments (argv[1...]), may be empty
};

// Validates the options (UsageError naming the flag: --nproc-per-node in [1, 1024], --nnodes in
// [1, 65536], --grace-seconds in [0, 3600], --max-restarts in [0, 1000], a valid
// --launch-job-id), runs the ranks, returns the exit code: 0 when all succeed, else the code of
// the first rank that failed (128 + signal if killed), or 128 + the signal the launcher
// forwarded. A failure other than a usage error (exit 2) restarts every rank while restarts are
// left; each rank sees TORCHELASTIC_RESTART_COUNT. Several nodes: DistributedError when the
// launchers cannot agree (one not reachable within timeoutSeconds).
int launchLocalRanks(const LaunchOptions& options);

// A TCP port that was free on 127.0.0.1 a moment ago.
int findFreePort();

}  // namespace fixres::distributed
