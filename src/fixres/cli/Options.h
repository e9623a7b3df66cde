// Option groups shared by several subcommands, each option declared once (name, help, default,
// environment variable, the range of its values).
#pragma once

#include <CLI/CLI.hpp>

#include "fixres/common/Setting.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/World.h"

namespace fixres::cli {

struct ClusterOptions {
  distributed::ClusterFlags flags;
  distributed::Backend backend = distributed::Backend::kAuto;
  std::string networkInterface;
  bool sharedMemory = true;  // --no-shared-memory turns it off

  // The cluster flags, one row each, for every command that runs ranks (the rank flags are
  // optionals: set only when given, else the environment's).
  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    constexpr auto kInvocation = SettingRole::kInvocation;
    const auto row = [](const char* flags, const char* help, Range range = {},
                        const char* env = "") {
      return Setting{"", flags, "Cluster", help, range, kInvocation, "", env};
    };
    v(row("--num-tasks", "Total number of processes (world size)", Range::integers(1, 65536)),
      o.flags.numTasks);
    v(row("--global-rank", "Rank of this process", Range::integers(0, 65535)), o.flags.globalRank);
    v(row("--local-rank", "Rank on this node (GPU index)", Range::integers(0, 65535)),
      o.flags.localRank);
    v(row("--job-id",
          "Job id: names the rendezvous (train, finetune and sweep: and the run folder)"),
      o.flags.jobId);
    v(row("--shared-folder-path",
          "Folder seen by every rank: the rendezvous file when no --dist-url (train, finetune "
          "and sweep: and the run folders)"),
      o.flags.sharedFolderPath);
    v(row("--dist-url", "Rendezvous: tcp://host:port or file:///path"), o.flags.distUrl);
    v(row("--dist-timeout", "Seconds before a lost or silent rank fails the job (exit code 5)",
          Range::reals(0, 604800, /*loOpen=*/true), "FIXRES_DIST_TIMEOUT"),
      o.flags.timeoutSeconds);
    v(row("--backend", "Collectives: auto (NCCL on CUDA, else Gloo), gloo, nccl"), o.backend,
      distributed::backendNames());
    v(row("--network-interface",
          "Gloo: network interface to bind (default: the one routing to the master)", {},
          "GLOO_SOCKET_IFNAME"),
      o.networkInterface);
    v(row("--no-shared-memory",
          "CPU: all-reduce through Gloo even when every rank is on this host (default: through "
          "shared memory)"),
      o.sharedMemory);
  }
};

// Binds the cluster rows (ClusterOptions::visitSettings) on `app`.
void addClusterOptions(CLI::App& app, ClusterOptions& options);

// Discovers the world from the flags and the environment, sets the log rank.
distributed::WorldInfo resolveWorld(const ClusterOptions& options);

}  // namespace fixres::cli
