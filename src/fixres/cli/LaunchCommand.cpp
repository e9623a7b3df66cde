// `fixres launch`: start the local ranks of a job (torchrun-style environment), or with
// --print-env show what a rank would detect from its flags and environment.
#include <unistd.h>

#include <climits>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Options.h"
#include "fixres/common/Error.h"
#include "fixres/distributed/Launcher.h"

namespace fixres::cli {
namespace {
std::string selfExecutable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  FIXRES_CHECK(n > 0, InternalError, "cannot locate the fixres executable (/proc/self/exe)");
  path[n] = '\0';
  return path;
}
}  // namespace

Command addLaunchCommand(CLI::App& parent, GlobalOptions& global) {
  auto* sub = parent.add_subcommand(
      "launch",
      "Start N local ranks of a fixres subcommand: fixres launch --nproc-per-node N -- train ...");
  struct State {
    distributed::LaunchOptions launch;
    ClusterOptions cluster;
    bool printEnv = false;
    std::string program;
  };
  auto s = std::make_shared<State>();
  sub->add_option("--nproc-per-node", s->launch.nprocPerNode, "Ranks to start on this node")
      ->capture_default_str();
  sub->add_option("--nnodes", s->launch.nnodes, "Number of nodes")->capture_default_str();
  sub->add_option("--node-rank", s->launch.nodeRank, "Index of this node")->capture_default_str();
  sub->add_option("--master-addr", s->launch.masterAddr, "Address of node 0 (rendezvous host)")
      ->capture_default_str();
  sub->add_option("--master-port", s->launch.masterPort,
                  "Rendezvous port (0: a free port, single node only)")
      ->capture_default_str();
  sub->add_option("--launch-job-id", s->launch.jobId, "Job id passed to the ranks (FIXRES_JOB_ID)");
  sub->add_option("--grace-seconds", s->launch.graceSeconds,
                  "Delay between SIGTERM and SIGKILL when stopping ranks")
      ->capture_default_str();
  sub->add_option("--program", s->program, "Program to start instead of this fixres binary");
  sub->add_flag("--print-env", s->printEnv,
                "Print the world this process detects (flags > torchrun > SLURM > MPI) and exit");
  addClusterOptions(*sub, s->cluster);
  sub->add_option("command", s->launch.arguments, "The subcommand and its flags, after --");
  return {sub, [s]() -> int {
            if (s->printEnv) {
              std::cout << resolveWorld(s->cluster).describe();
              return 0;
            }
            s->launch.executable = s->program.empty() ? selfExecutable() : s->program;
            return distributed::launchLocalRanks(s->launch);
          }};
}

}  // namespace fixres::cli
