// Who am I in the job: rank, world size, local rank, and how the ranks meet (rendezvous).
// Discovered from explicit FixRes flags, then torchrun, SLURM and Open MPI environments, else a
// single process. This file and the CLI are the only places that look at the environment.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace fixres::distributed {

// FixRes's own cluster flags (all optional; unset = not given).
struct ClusterFlags {
  std::optional<int> numTasks;       // --num-tasks (world size)
  std::optional<int> globalRank;     // --global-rank
  std::optional<int> localRank;      // --local-rank
  std::optional<std::string> jobId;  // --job-id (given empty: refused, not "not given")
  std::string sharedFolderPath;      // --shared-folder-path
  std::string distUrl;               // --dist-url tcp://host:port | file:///path
  double timeoutSeconds = 300;       // --dist-timeout: collectives and rendezvous
};

using Environment = std::map<std::string, std::string>;
Environment currentEnvironment();

enum class StoreKind { kNone, kTcp, kFile };

struct WorldInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localWorldSize = 1;
  std::string source = "single";  // flags | torchrun | slurm | mpi | single
  std::string jobId;
  StoreKind store = StoreKind::kNone;
  std::string masterAddr;  // kTcp
  int masterPort = 0;      // kTcp
  std::string storePath;   // kFile
  bool loopback = false;   // every rank on this host: Gloo listens on 127.0.0.1 only
  double timeoutSeconds = 300;

  bool distributed() const { return worldSize > 1; }
  std::string describe() const;  // multi-line "key: value" report (fixres launch --print-env)
};

// Applies the precedence flags > torchrun > SLURM > Open MPI > single process. Throws
// UsageError on inconsistent settings (rank >= world size, flags contradicting the environment,
// a world of several processes with no way to meet).
WorldInfo detectWorld(const ClusterFlags& flags, const Environment& env);

// First host of a SLURM node list: "node[03-05,9],gpu1" -> "node03".
std::string firstSlurmHost(const std::string& nodeList);

// A job id names a folder (runs/<mode>/<job id>) and a file (fixres_rendezvous_<job id>), so it
// must be one path component of safe characters: [A-Za-z0-9._-], 1 to kMaxJobIdLength of them,
// not starting with '.' or '-' (so neither "." nor ".." nor a hidden name nor an option). Throws
// UsageError naming `what` (the flag or environment variable it came from) and the value.
constexpr size_t kMaxJobIdLength = 128;
void checkJobId(const std::string& jobId, const std::string& what);

// Deterministic port for a job id (same on every rank): 20000 + hash(jobId) % 20000.
int portForJob(const std::string& jobId);

}  // namespace fixres::distributed
