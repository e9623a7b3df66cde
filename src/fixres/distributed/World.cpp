// World discovery: explicit flags, torchrun, SLURM, Open MPI, single process.
#include "fixres/distributed/World.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "fixres/common/Error.h"

extern char** environ;

namespace fixres::distributed {
namespace {

std::optional<std::string> get(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int parseInt(const std::string& value, const std::string& what) {
  try {
    size_t used = 0;
    int v = std::stoi(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  FIXRES_FAIL(UsageError, what, " must be an integer, got '", value, "'");
}

int intEnv(const Environment& env, const std::string& key, int fallback) {
  auto v = get(env, key);
  return v ? parseInt(*v, key) : fallback;
}

// tcp://host:port or file:///path
void applyDistUrl(const std::string& url, WorldInfo& w) {
  if (url.rfind("tcp://", 0) == 0) {
    std::string rest = url.substr(6);
    auto colon = rest.rfind(':');
    FIXRES_CHECK(colon != std::string::npos && colon > 0, UsageError,
                 "--dist-url must be tcp://host:port, got '", url, "'");
    w.store = StoreKind::kTcp;
    w.masterAddr = rest.substr(0, colon);
    w.masterPort = parseInt(rest.substr(colon + 1), "--dist-url port");
  } else if (url.rfind("file://", 0) == 0) {
    w.store = StoreKind::kFile;
    w.storePath = url.substr(7);
    FIXRES_CHECK(!w.storePath.empty(), UsageError, "--dist-url file:// needs a path");
  } else {
    FIXRES_FAIL(UsageError, "--dist-url must start with tcp:// or file://, got '", url, "'");
  }
}

void checkRanks(const WorldInfo& w) {
  FIXRES_CHECK(w.worldSize >= 1, UsageError, "world size must be >= 1, got ", w.worldSize,
               " (from ", w.source, ")");
  FIXRES_CHECK(w.rank >= 0 && w.rank < w.worldSize, UsageError, "rank ", w.rank,
               " is outside the world of ", w.worldSize, " processes (from ", w.source, ")");
  FIXRES_CHECK(w.localRank >= 0, UsageError, "local rank must be >= 0, got ", w.localRank);
  FIXRES_CHECK(w.masterPort >= 0 && w.masterPort < 65536, UsageError, "master port ", w.masterPort,
               " is not a TCP port");
}

// Rendezvous for a multi-process world when no URL was given: MASTER_ADDR/PORT, else a file
// named after the job id in the shared folder (every rank derives the same name).
void chooseStore(const ClusterFlags& flags, const Environment& env, WorldInfo& w) {
  if (!flags.distUrl.empty()) {
    applyDistUrl(flags.distUrl, w);
    return;
  }
  if (w.store != StoreKind::kNone || !w.distributed()) return;
  // `fixres launch` on one node: a file store in a private folder, so the job opens no port
  // reachable from other hosts (LibTorch's TCPStore server listens on every interface).
  if (auto file = get(env, "FIXRES_LOCAL_STORE")) {
    w.store = StoreKind::kFile;
    w.storePath = *file;
    w.loopback = true;
    return;
  }
  if (auto addr = get(env, "MASTER_ADDR")) {
    w.store = StoreKind::kTcp;
    w.masterAddr = *addr;
    w.masterPort = intEnv(env, "MASTER_PORT", portForJob(w.jobId));
    return;
  }
  if (!flags.sharedFolderPath.empty()) {
    FIXRES_CHECK(!w.jobId.empty(), UsageError,
                 "--shared-folder-path rendezvous needs a job id (--job-id or SLURM_JOB_ID)");
    w.store = StoreKind::kFile;
    w.storePath = flags.sharedFolderPath + "/fixres_rendezvous_" + w.jobId;
    return;
  }
  FIXRES_FAIL(UsageError, "a world of ", w.worldSize,
              " processes needs a rendezvous: give --dist-url, MASTER_ADDR/MASTER_PORT, or "
              "--shared-folder-path with --job-id");
}

}  // namespace

Environment currentEnvironment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string firstSlurmHost(const std::string& nodeList) {
  // Hosts are separated by commas outside brackets; a bracket holds ranges and lists.
  std::string first;
  int depth = 0;
  for (char c : nodeList) {
    if (c == '[') depth++;
    if (c == ']') depth--;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  auto open = first.find('[');
  if (open == std::string::npos) return first;
  std::string prefix = first.substr(0, open);
  std::string inside = first.substr(open + 1, first.find(']') - open - 1);
  std::string item = inside.substr(0, inside.find(','));
  std::string start = item.substr(0, item.find('-'));
  std::string suffix = first.substr(first.find(']') + 1);
  return prefix + start + suffix;
}

void checkJobId(const std::string& jobId, const std::string& what) {
  const auto refuse = [&](const char* why) {
    FIXRES_FAIL(UsageError, what, " '", jobId, "' is not a valid job id: ", why,
                " (a job id names a folder: 1 to ", kMaxJobIdLength,
                " of A-Z a-z 0-9 . _ -, not starting with '.' or '-')");
  };
  if (jobId.empty()) refuse("it is empty");
  if (jobId.size() > kMaxJobIdLength) refuse("it is too long");
  if (jobId[0] == '.') refuse("it starts with '.'");
  if (jobId[0] == '-') refuse("it starts with '-'");
  for (unsigned char c : jobId) {
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-')
      refuse("it holds a character not allowed");
  }
}

int portForJob(const std::string& jobId) {
  uint32_t h = 2166136261u;  // FNV-1a: stable across platforms and runs
  for (unsigned char c : jobId) h = (h ^ c) * 16777619u;
  return 20000 + static_cast<int>(h % 20000u);
}

WorldInfo detectWorld(const ClusterFlags& flags, const Environment& env) {
  WorldInfo w;
  w.timeoutSeconds = flags.timeoutSeconds;
  FIXRES_CHECK(flags.timeoutSeconds > 0, UsageError, "--dist-timeout must be positive, got ",
               flags.timeoutSeconds);

  // The launchers fixres recognises, in priority order, by the variables each one sets.
  struct LauncherVars {
    const char* source;
    const char* rank;
    const char* worldSize;
    const char* localRank;
    const char* localWorldSize;
  };
  static const LauncherVars kLaunchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
      {"mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
  };
  for (const auto& l : kLaunchers) {
    if (!get(env, l.rank) || !get(env, l.worldSize)) continue;
    w.source = l.source;
    w.rank = intEnv(env, l.rank, 0);
    w.worldSize = intEnv(env, l.worldSize, 1);
    w.localRank = intEnv(env, l.localRank, 0);
    w.localWorldSize = intEnv(env, l.localWorldSize, 1);
    break;
  }
  // Where the job id comes from, for messages: the flag or the environment variable.
  std::string jobIdFrom;
  // Set but empty counts as set (and is refused below): an empty id names no folder.
  auto jobIdFromEnv = [&](const char* key) {
    const auto v = env.find(key);
    if (v == env.end()) return false;
    w.jobId = v->second;
    jobIdFrom = key;
    return true;
  };
  if (w.source == "torchrun") {
    if (!jobIdFromEnv("TORCHELASTIC_RUN_ID")) jobIdFromEnv("FIXRES_JOB_ID");
  } else if (w.source == "slurm") {
    jobIdFromEnv("SLURM_JOB_ID");
    if (!get(env, "MASTER_ADDR") && flags.sharedFolderPath.empty() && flags.distUrl.empty()) {
      if (auto nodes = get(env, "SLURM_JOB_NODELIST")) {
        w.store = StoreKind::kTcp;
        w.masterAddr = firstSlurmHost(*nodes);
        w.masterPort = intEnv(env, "MASTER_PORT", portForJob(w.jobId));
      }
    }
  }

  const bool anyFlag = flags.numTasks || flags.globalRank || flags.localRank;
  if (anyFlag) {
    if (w.source != "single") {
      // Flags and the launcher's environment must not contradict each other.
      FIXRES_CHECK(!flags.numTasks || *flags.numTasks == w.worldSize, UsageError, "--num-tasks ",
                   *flags.numTasks, " disagrees with the ", w.source, " environment (world size ",
                   w.worldSize, ")");
      FIXRES_CHECK(!flags.globalRank || *flags.globalRank == w.rank, UsageError, "--global-rank ",
                   *flags.globalRank, " disagrees with the ", w.source, " environment (rank ",
                   w.rank, ")");
      FIXRES_CHECK(!flags.localRank || *flags.localRank == w.localRank, UsageError, "--local-rank ",
                   *flags.localRank, " disagrees with the ", w.source, " environment (local rank ",
                   w.localRank, ")");
    } else {
      w.source = "flags";
      w.worldSize = flags.numTasks.value_or(1);
      w.rank = flags.globalRank.value_or(0);
      w.localRank = flags.localRank.value_or(0);
      w.localWorldSize = w.worldSize;
    }
  }
  if (flags.jobId) {
    checkJobId(*flags.jobId, "--job-id");
    FIXRES_CHECK(w.jobId.empty() || w.jobId == *flags.jobId || w.source == "torchrun", UsageError,
                 "--job-id ", *flags.jobId, " disagrees with the ", w.source, " job id ", w.jobId);
    w.jobId = *flags.jobId;
    jobIdFrom.clear();  // checked above
  }
  if (w.jobId.empty() && jobIdFrom.empty() && !jobIdFromEnv("FIXRES_JOB_ID")) w.jobId = "local";
  if (!jobIdFrom.empty()) checkJobId(w.jobId, jobIdFrom);
  chooseStore(flags, env, w);
  checkRanks(w);
  return w;
}

std::string WorldInfo::describe() const {
  std::ostringstream os;
  os << "source: " << source << "\n"
     << "rank: " << rank << "\n"
     << "world_size: " << worldSize << "\n"
     << "local_rank: " << localRank << "\n"
     << "local_world_size: " << localWorldSize << "\n"
     << "job_id: " << jobId << "\n";
  switch (store) {
    case StoreKind::kNone:
      os << "rendezvous: none (single process)\n";
      break;
    case StoreKind::kTcp:
      os << "rendezvous: tcp://" << masterAddr << ":" << masterPort << "\n";
      break;
    case StoreKind::kFile:
      os << "rendezvous: file://" << storePath << "\n";
      break;
  }
  os << "timeout_s: " << timeoutSeconds << "\n";
  return os.str();
}

}  // namespace fixres::distributed
