// `fixres launch`: starts the local ranks of a job with a torchrun-style environment, prefixes
// their output with the rank, forwards SIGINT/SIGTERM, and when one rank fails stops the
// others and returns that rank's exit code.
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
  std::string jobId;                   // default: "launch-<pid>"
  double graceSeconds = 10;            // SIGTERM -> SIGKILL delay when stopping ranks
  std::string executable;              // path of the program to start (argv[0]): fixres itself or
                                       // another program, checked by the caller; no PATH lookup
  std::vector<std::string> arguments;  // its arguments (argv[1...]), may be empty
};

// Validates the options (UsageError naming the flag), runs the ranks, returns the exit code:
// 0 when all succeed, else the code of the first rank that failed (128 + signal if killed).
int launchLocalRanks(const LaunchOptions& options);

// A TCP port that was free on 127.0.0.1 a moment ago.
int findFreePort();

}  // namespace fixres::distributed
