// `fixres launch`: starts the local ranks of a job with a torchrun-style environment, prefixes
// their output with the rank, forwards SIGINT/SIGTERM/SIGHUP, and when one rank fails stops the
// others and returns that rank's exit code -- or, with maxRestarts > 0, starts every rank again
// (on every node, agreed through RestartCoordinator) up to maxRestarts times. On one node the ranks
// meet in a private folder that the launcher removes on every exit it sees; the folders of
// launchers killed with SIGKILL are removed by the next launch.
#pragma once

#include <string>
#include <vector>

#include "fixres/common/Setting.h"

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

// `fixres launch`'s request: the launcher's options and what the command adds, one row each
// (the cluster flags are the shared ones). The ranges are launchLocalRanks's checks.
struct LaunchRequest {
  LaunchOptions launch;
  std::string program;    // --program: every word after -- is its argument
  bool printEnv = false;  // --print-env: say what a rank would detect, and exit

  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    const auto row = [](const char* flags, const char* help) {
      return Setting{"", flags, "Launch", help, {}, kInvocation, "launch"};
    };
    v(row("--nproc-per-node", "Ranks to start on this node"), r.launch.nprocPerNode);
    v(row("--nnodes", "Number of nodes"), r.launch.nnodes);
    v(row("--node-rank", "Index of this node"), r.launch.nodeRank);
    v(row("--master-addr", "Address of node 0 (rendezvous host)"), r.launch.masterAddr);
    v(row("--master-port", "Rendezvous port (0: a free port, single node only)"),
      r.launch.masterPort);
    v(row("--launch-job-id",
          "Job id passed to the ranks (FIXRES_JOB_ID); default: the ranks' own (--job-id, else "
          "local), so that the same command again resumes the run"),
      r.launch.jobId);
    v(row("--grace-seconds", "Delay between SIGTERM and SIGKILL when stopping ranks"),
      r.launch.graceSeconds);
    v(row("--max-restarts",
          "When a rank fails (any exit but 0 and 2, or a signal), stop every rank and start them "
          "all again, up to N times (every node together); in [0, 1000]"),
      r.launch.maxRestarts);
    v(row("--program",
          "Program to start (a path, or a name looked up on PATH); every word after -- is its "
          "argument"),
      r.program);
    v(row("--print-env",
          "Print the world this process detects (flags > torchrun > SLURM > MPI) and exit"),
      r.printEnv);
    v(row("command", "After --: a fixres subcommand and its flags, or a program and its arguments"),
      r.launch.arguments);
  }
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
