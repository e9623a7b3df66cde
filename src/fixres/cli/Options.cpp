// Shared option groups.
#include "fixres/cli/Options.h"

#include "fixres/cli/Flags.h"
#include "fixres/common/Log.h"

namespace fixres::cli {
namespace {
// CLI11 2.1 cannot bind std::optional<int> directly on every version: go through a callback.
void addOptionalInt(CLI::App& app, const std::string& name, std::optional<int>& target,
                    const std::string& help, const CLI::Validator& check) {
  app.add_option_function<int>(
         name, [&target](const int& v) { target = v; }, help)
      ->check(check)
      ->group("Cluster");
}
}  // namespace

void addClusterOptions(CLI::App& app, ClusterOptions& o) {
  addOptionalInt(app, "--num-tasks", o.flags.numTasks, "Total number of processes (world size)",
                 intIn(1, 65536));
  addOptionalInt(app, "--global-rank", o.flags.globalRank, "Rank of this process", intIn(0, 65535));
  addOptionalInt(app, "--local-rank", o.flags.localRank, "Rank on this node (GPU index)",
                 intIn(0, 65535));
  auto& jobId = o.flags.jobId;
  app.add_option_function<std::string>(
         "--job-id", [&jobId](const std::string& v) { jobId = v; },
         "Job id: names the rendezvous (train, finetune and sweep: and the run folder)")
      ->group("Cluster");
  app.add_option("--shared-folder-path", o.flags.sharedFolderPath,
                 "Folder seen by every rank: the rendezvous file when no --dist-url (train, "
                 "finetune and sweep: and the run folders)")
      ->group("Cluster");
  app.add_option("--dist-url", o.flags.distUrl, "Rendezvous: tcp://host:port or file:///path")
      ->group("Cluster");
  app.add_option("--dist-timeout", o.flags.timeoutSeconds,
                 "Seconds before a lost or silent rank fails the job (exit code 5)")
      ->envname("FIXRES_DIST_TIMEOUT")
      ->check(finiteIn(0, 604800, /*openLow=*/true))
      ->capture_default_str()
      ->group("Cluster");
  addChoice(app, "--backend", o.backend, distributed::backendNames(),
            "Collectives: auto (NCCL on CUDA, else Gloo), gloo, nccl")
      ->group("Cluster");
  app.add_option("--network-interface", o.networkInterface,
                 "Gloo: network interface to bind (default: the one routing to the master)")
      ->envname("GLOO_SOCKET_IFNAME")
      ->group("Cluster");
  app.add_flag("--no-shared-memory", o.noSharedMemory,
               "CPU: all-reduce through Gloo even when every rank is on this host (default: "
               "through shared memory)")
      ->group("Cluster");
}

distributed::WorldInfo resolveWorld(const ClusterOptions& o) {
  auto world = distributed::detectWorld(o.flags, distributed::currentEnvironment());
  log::setRank(world.rank, world.worldSize);
  return world;
}

}  // namespace fixres::cli
