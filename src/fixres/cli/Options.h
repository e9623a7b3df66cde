// Option groups shared by several subcommands, each option declared once (name, help, default,
// environment variable, the range of its values).
#pragma once

#include <CLI/CLI.hpp>

#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/World.h"

namespace fixres::cli {

struct ClusterOptions {
  distributed::ClusterFlags flags;
  distributed::Backend backend = distributed::Backend::kAuto;
  std::string networkInterface;
  bool noSharedMemory = false;  // --no-shared-memory
};

// --num-tasks, --global-rank, --local-rank, --job-id, --shared-folder-path, --dist-url,
// --dist-timeout, --backend, --network-interface, --no-shared-memory.
void addClusterOptions(CLI::App& app, ClusterOptions& options);

// Discovers the world from the flags and the environment, sets the log rank.
distributed::WorldInfo resolveWorld(const ClusterOptions& options);

}  // namespace fixres::cli
