// Local process launcher with output prefixing, signal forwarding and fail-fast supervision.
#include "fixres/distributed/Launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "fixres/common/Error.h"
#include "fixres/common/FolderLock.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/distributed/RankProcess.h"
#include "fixres/distributed/RestartCoordinator.h"
#include "fixres/distributed/World.h"

namespace fixres::distributed {
namespace {

std::atomic<int> gForwardSignal{0};
void onSignal(int sig) {
  gForwardSignal = sig;
}
bool signalled() {
  return gForwardSignal.load() != 0;
}

// Tells the other nodes' launchers that this one was stopped by signal `sig` in `generation`
// (rank -1: no rank failed), so that they stop their ranks; a store that no longer answers is
// only worth a warning, as this launcher is on its way out.
void announceSignal(RestartCoordinator& coordinator, int generation, int nodeRank, int sig) {
  try {
    coordinator.announce(generation, RankFailure{nodeRank, -1, 128 + sig, false});
  } catch (const Error& e) {
    log::warn(oneLine(e.what()));
  }
}

// The launcher's own error lines look like every fixres error line.
void errorLine(const std::string& message) {
  const std::string line = "fixres: error: " + message + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}
void noteLine(const std::string& message) {
  const std::string line = "fixres: " + message + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

constexpr const char* kFolderPrefix = "fixres-launch-";

// The private rendezvous folder of a single-node launch: `$TMPDIR/fixres-launch-XXXXXX` (mode
// 0700), locked by this launcher for its whole life (the lock file holds its pid), removed on
// every exit this process sees (the destructor runs on normal ends, errors and forwarded
// signals). A launcher killed with SIGKILL leaves it behind; the next launch removes it, knowing
// it stale because its lock is free (the kernel released it when its holder died).
class LaunchFolder {
 public:
  LaunchFolder() {
    std::string pattern = tmpRoot() + "/" + kFolderPrefix + "XXXXXX";
    FIXRES_CHECK(::mkdtemp(pattern.data()) != nullptr, DistributedError,
                 "cannot create a private rendezvous folder ", pattern, ": ", std::strerror(errno));
    path_ = pattern;
    try {
      lock_.emplace(path_);
    } catch (...) {
      remove();
      throw;
    }
  }
  ~LaunchFolder() { remove(); }
  LaunchFolder(const LaunchFolder&) = delete;
  LaunchFolder& operator=(const LaunchFolder&) = delete;

  const std::string& path() const { return path_; }

  static std::string tmpRoot() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
  }

  // Removes the folders of launchers that are gone: this user's `fixres-launch-*` folders in
  // the temporary folder whose lock file names a holder and whose lock is free. A folder whose
  // lock file is missing or empty may be one being set up, and is left alone. Returns how many.
  static int removeStale() {
    const std::string root = tmpRoot();
    std::error_code ec;
    int removed = 0;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(kFolderPrefix, 0) != 0) continue;
      const std::string dir = entry.path().string();
      struct stat st {};
      if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        continue;
      const std::string holder = readLockHolder(dir);
      if (holder.empty()) continue;
      try {
        auto lock = FolderLock::tryLock(dir);
        if (!lock || !lock->held()) continue;
        std::filesystem::remove_all(dir, ec);
      } catch (const Error& e) {  // e.g. removed meanwhile by another launch
        log::warn("launch: cannot check the rendezvous folder ", dir, ": ", e.what());
        continue;
      }
      if (ec) {
        log::warn("launch: cannot remove the stale rendezvous folder ", dir, ": ", ec.message());
      } else {
        log::info("launch: removed ", dir, ", left by a launcher that is gone (pid ",
                  holder.substr(0, holder.find(' ')), ")");
        ++removed;
      }
    }
    return removed;
  }

 private:
  void remove() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    path_.clear();
  }

  std::string path_;
  std::optional<FolderLock> lock_;
};

// Bounds of the launch flags: far beyond any machine (1,024 local ranks, 65,536 nodes), close
// enough that a typo fails at once instead of starting ranks for minutes.
constexpr int kMaxLocalRanks = 1024;
constexpr int kMaxNodes = 65536;
constexpr double kMaxGraceSeconds = 3600;
constexpr int kMaxRestarts = 1000;

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

using Clock = std::chrono::steady_clock;

// How a generation of ranks ended: the launcher returns exitCode, or restarts every rank.
struct GenerationEnd {
  bool restart = false;
  int exitCode = 0;
  RankFailure cause;  // what made them restart
};

// A rank's failure worth a restart: any non-zero exit or death by a signal, except a usage error
// (exit 2: the same arguments fail again). A stop the launcher forwarded is no failure.
bool restartable(int code) {
  return code != 0 && code != static_cast<int>(ExitCode::kUsage);
}

// One generation of the local ranks, run the way torch elastic's agent runs one: start() spawns
// them; monitor() relays their output and supervises them until all have exited -- a failing
// rank, a forwarded signal or (several nodes) a failure another node announced stops them all --
// and says how the generation ended. The first of those events decides the end; later ones only
// stop the ranks (a signal also cancels a restart).
class Generation {
 public:
  Generation(const LaunchOptions& o, int generation, int worldSize, RestartCoordinator* coordinator)
      : o_(o),
        generation_(generation),
        worldSize_(worldSize),
        coordinator_(coordinator),
        mayRestart_(generation < o.maxRestarts) {}

  void start(const std::string& localStore) {
    ranks_ = startRanks(o_, worldSize_, localStore, generation_);
  }

  GenerationEnd monitor() {
    nextPoll_ = Clock::now();
    while (anyOpen(ranks_)) {
      relayOutput(ranks_, 100);
      // A signal from the user first: a rank that it made exit is then no failure to restart.
      if (int sig = gForwardSignal.exchange(0)) forwardSignal(sig);
      reapExited();
      // Several nodes: a failure another node announced stops this node's ranks too.
      if (coordinator_ && !decided_ && Clock::now() >= nextPoll_) pollOtherNodes();
      if (stopping_ && Clock::now() > stopDeadline_) {
        signalRunning(ranks_, SIGKILL);
        stopDeadline_ = Clock::time_point::max();
      }
      if (!anyRunning(ranks_)) endLeftovers();
    }
    if (decided_) return end_;
    return waitForOtherNodes();
  }

 private:
  Clock::time_point graceDeadline() const {
    return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o_.graceSeconds * 1000));
  }

  // Every rank has exited but something a rank started holds its output open (a shell's child,
  // a daemon): it has the grace period to finish writing, then its group is killed, and a
  // second later the pipes are closed whatever holds them.
  void endLeftovers() {
    const auto now = Clock::now();
    if (leftoverDeadline_ == Clock::time_point::max()) {
      leftoverDeadline_ = graceDeadline();
    } else if (now > leftoverDeadline_ && !leftoversKilled_) {
      killLeftovers(ranks_);
      leftoversKilled_ = true;
      leftoverDeadline_ = now + std::chrono::seconds(1);
    } else if (now > leftoverDeadline_) {
      closeLeftovers(ranks_);
    }
  }

  // SIGTERM to every rank now, SIGKILL to those still running after the grace period.
  void startStopping() {
    stopping_ = true;
    signalRunning(ranks_, SIGTERM);
    stopDeadline_ = graceDeadline();
  }

  // The store may be gone (node 0's launcher): this node stops its ranks and says so.
  void storeLost(const Error& e) {
    errorLine(std::string(e.what()) + "; stopping the ranks of this node");
    end_ = GenerationEnd{false, static_cast<int>(ExitCode::kDistributed), {}};
    decided_ = true;
    if (!stopping_) startStopping();
  }

  // The user's signal `sig` reaches every rank: the generation ends with 128 + sig when nothing
  // decided it before, and no restart that was decided happens.
  void forwardSignal(int sig) {
    log::warn("launch: forwarding ", stopSignalName(sig), " to the ranks");
    if (!stopping_) {
      stopping_ = true;
      end_ = GenerationEnd{false, 128 + sig, {}};
      stopDeadline_ = graceDeadline();
      if (coordinator_ && !decided_) announceSignal(*coordinator_, generation_, o_.nodeRank, sig);
    } else if (end_.restart) {
      log::warn("launch: no restart after ", stopSignalName(sig));
      end_.restart = false;
      // The other nodes must not wait for this one.
      if (coordinator_) announceSignal(*coordinator_, generation_, o_.nodeRank, sig);
    }
    decided_ = true;
    signalRunning(ranks_, sig);
  }

  // Collects the ranks that have exited; a failure before the end is decided decides it.
  void reapExited() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& c : ranks_) {
        if (c.pid != pid) continue;
        c.running = false;
        c.exitCode = exitCodeOfStatus(status);
        if (c.exitCode == 0 || decided_ || stopping_) continue;
        rankFailed(c);
      }
    }
  }

  // Local rank c failed first: the failure that counts (several nodes: the first any node
  // announced) ends the generation, with a restart when both it and c's failure allow one.
  void rankFailed(const RankProcess& c) {
    RankFailure mine{o_.nodeRank, c.globalRank, c.exitCode, mayRestart_ && restartable(c.exitCode)};
    RankFailure counts = mine;
    if (coordinator_) {
      try {
        counts = coordinator_->announce(generation_, mine);
      } catch (const Error& e) {
        storeLost(e);
        return;
      }
    }
    decided_ = true;
    if (counts.restart && mine.restart) {
      end_ = GenerationEnd{true, c.exitCode, counts};
      log::warn("launch: rank ", c.globalRank, " exited with code ", c.exitCode,
                "; stopping the other ranks to restart them");
    } else {
      end_ = GenerationEnd{false, c.exitCode, mine};
      errorLine(detail::concat("rank ", c.globalRank, " exited with code ", c.exitCode,
                               "; stopping the other ranks"));
    }
    startStopping();
  }

  // Asks the store (at most every 250 ms) whether another node announced a failure.
  void pollOtherNodes() {
    nextPoll_ = Clock::now() + std::chrono::milliseconds(250);
    try {
      if (auto f = coordinator_->announced(generation_)) {
        decided_ = true;
        if (f->restart) {
          end_ = GenerationEnd{true, f->code, *f};
          log::warn("launch: on node ", f->node, ", rank ", f->rank, " exited with code ", f->code,
                    "; stopping the ranks of this node to restart them");
        } else {
          end_ = GenerationEnd{false, static_cast<int>(ExitCode::kDistributed), *f};
          errorLine(f->rank < 0 ? detail::concat("the launcher of node ", f->node,
                                                 " was stopped by a signal; stopping the ranks "
                                                 "of this node")
                                : detail::concat("on node ", f->node, ", rank ", f->rank,
                                                 " exited with code ", f->code,
                                                 "; stopping the ranks of this node"));
        }
        startStopping();
      }
    } catch (const Error& e) {
      storeLost(e);
    }
  }

  // Every local rank succeeded. Several nodes: the others may still fail and restart all.
  GenerationEnd waitForOtherNodes() {
    if (coordinator_) {
      log::info("launch: the ranks of node ", o_.nodeRank,
                " are done; waiting for the other nodes");
      if (auto f = coordinator_->waitAllDone(generation_, signalled); f && f->restart)
        return GenerationEnd{true, f->code, *f};
      if (int sig = gForwardSignal.exchange(0)) {
        // The user stopped this launcher while it waited for the others: they stop too.
        log::warn("launch: ", stopSignalName(sig), " while waiting for the other nodes' ranks");
        announceSignal(*coordinator_, generation_, o_.nodeRank, sig);
        return GenerationEnd{false, 128 + sig, {}};
      }
    }
    return GenerationEnd{false, 0, {}};
  }

  const LaunchOptions& o_;
  const int generation_;
  const int worldSize_;
  RestartCoordinator* const coordinator_;
  const bool mayRestart_;
  std::vector<RankProcess> ranks_;
  GenerationEnd end_;
  bool stopping_ = false;
  bool decided_ = false;  // end_ says how the generation ends
  Clock::time_point stopDeadline_ = Clock::time_point::max();
  Clock::time_point leftoverDeadline_ = Clock::time_point::max();
  bool leftoversKilled_ = false;
  Clock::time_point nextPoll_;
};

// After generation `generation` ended as `end`: the launcher's exit code, or nullopt when every
// rank starts again (several nodes: once the other nodes' ranks have stopped too). A signal that
// came meanwhile ends the launch, and the other nodes are told.
std::optional<int> exitOrRestart(const LaunchOptions& o, int generation, const GenerationEnd& end,
                                 RestartCoordinator* coordinator) {
  if (!end.restart) {
    if (coordinator) coordinator->leave();
    return end.exitCode;
  }
  if (coordinator) coordinator->waitAllStopped(generation, signalled);
  if (int sig = gForwardSignal.exchange(0)) {
    log::warn("launch: ", stopSignalName(sig), " while restarting: no restart");
    if (coordinator) {
      coordinator->announce(generation + 1, RankFailure{o.nodeRank, -1, 128 + sig, false});
      coordinator->leave();
    }
    return 128 + sig;
  }
  noteLine(detail::concat("restarting all ranks (restart ", generation + 1, " of ", o.maxRestarts,
                          ") after rank ", end.cause.rank, " exited with ", end.cause.code));
  return std::nullopt;
}

// The checks of launchLocalRanks on the flags alone.
void checkOptions(const LaunchOptions& o) {
  FIXRES_CHECK(o.nprocPerNode >= 1 && o.nprocPerNode <= kMaxLocalRanks, UsageError,
               "--nproc-per-node must be in [1, ", kMaxLocalRanks, "], got ", o.nprocPerNode);
  FIXRES_CHECK(o.nnodes >= 1 && o.nnodes <= kMaxNodes, UsageError, "--nnodes must be in [1, ",
               kMaxNodes, "], got ", o.nnodes);
  FIXRES_CHECK(o.nodeRank >= 0 && o.nodeRank < o.nnodes, UsageError, "--node-rank ", o.nodeRank,
               " must be in [0, ", o.nnodes, ")");
  FIXRES_CHECK(
      std::isfinite(o.graceSeconds) && o.graceSeconds >= 0 && o.graceSeconds <= kMaxGraceSeconds,
      UsageError, "--grace-seconds must be in [0, ", kMaxGraceSeconds, "], got ", o.graceSeconds);
  FIXRES_CHECK(o.maxRestarts >= 0 && o.maxRestarts <= kMaxRestarts, UsageError,
               "--max-restarts must be in [0, ", kMaxRestarts, "], got ", o.maxRestarts);
  FIXRES_CHECK(std::isfinite(o.timeoutSeconds) && o.timeoutSeconds > 0, UsageError,
               "--dist-timeout must be positive, got ", o.timeoutSeconds);
  FIXRES_CHECK(!o.executable.empty(), UsageError,
               "fixres launch needs a command after '--', e.g. fixres launch --nproc-per-node 2 "
               "-- train ...");
  FIXRES_CHECK(o.masterPort >= 0 && o.masterPort < 65536, UsageError, "--master-port ",
               o.masterPort, " is not a TCP port");
  if (!o.jobId.empty()) checkJobId(o.jobId, "--launch-job-id");
}

}  // namespace

int findFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  FIXRES_CHECK(fd >= 0, DistributedError, "cannot create a socket: ", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  FIXRES_CHECK(port > 0, DistributedError, "cannot find a free TCP port on 127.0.0.1");
  return port;
}

int launchLocalRanks(const LaunchOptions& in) {
  LaunchOptions o = in;
  checkOptions(o);
  reserveFileDescriptors(o.nprocPerNode);
  if (o.masterPort == 0) {
    FIXRES_CHECK(o.nnodes == 1, UsageError, "--master-port is required with --nnodes > 1");
    o.masterPort = findFreePort();
  }
  FIXRES_CHECK(o.nnodes == 1 || o.maxRestarts == 0 || o.masterPort < 65535, UsageError,
               "--master-port ", o.masterPort,
               " leaves no port for the launchers' store (--master-port + 1, with --max-restarts "
               "on several nodes)");
  // Without --launch-job-id the ranks name their job as a lone run does (their --job-id, else
  // FIXRES_JOB_ID from the environment, else "local"), so that the same command run again finds
  // and resumes the same run folder.
  const int worldSize = o.nprocPerNode * o.nnodes;

  // Several nodes with restarts: the launchers meet first (before any signal is taken over, so
  // that Ctrl-C ends a launcher still waiting for the others).
  std::optional<RestartCoordinator> coordinator;
  if (o.nnodes > 1 && o.maxRestarts > 0) {
    CoordinatorOptions co;
    co.masterAddr = o.masterAddr;
    co.port = o.masterPort + 1;
    co.nodeRank = o.nodeRank;
    co.nnodes = o.nnodes;
    co.maxRestarts = o.maxRestarts;
    co.timeoutSeconds = o.timeoutSeconds;
    coordinator.emplace(co);
  }

  // SIGHUP (the terminal closed) is forwarded like SIGINT and SIGTERM: the ranks, in their own
  // process groups, would not get it otherwise. Under nohup (SIGHUP ignored) it stays ignored,
  // for the launcher and, through exec, for its ranks.
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  struct sigaction hup {};
  if (::sigaction(SIGHUP, nullptr, &hup) == 0 && hup.sa_handler != SIG_IGN)
    ::sigaction(SIGHUP, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // One node: fixres ranks meet through a file store in a private folder (mode 0700) rather
  // than a TCP store, whose server would listen on every interface. MASTER_ADDR/PORT are still
  // set for other programs.
  std::optional<LaunchFolder> storeDir;
  std::string localStore;
  if (o.nnodes == 1 && isLoopback(o.masterAddr)) {
    LaunchFolder::removeStale();
    storeDir.emplace();
    localStore = storeDir->path() + "/store";
  }

  log::info("launch: starting ", o.nprocPerNode, " rank(s) of ", o.executable, " on node ",
            o.nodeRank, "/", o.nnodes, ", world ", worldSize, ", master ", o.masterAddr, ":",
            o.masterPort, ", job ", o.jobId.empty() ? "named by the ranks" : o.jobId,
            o.maxRestarts > 0 ? detail::concat(", up to ", o.maxRestarts, " restart(s)") : "");
  RestartCoordinator* const nodes = coordinator ? &*coordinator : nullptr;
  for (int generation = 0;; ++generation) {
    // A fresh file store per generation: the killed ranks' keys must not mislead the new ones.
    const std::string store = localStore.empty() || generation == 0
                                  ? localStore
                                  : detail::concat(localStore, "-", generation);
    Generation g(o, generation, worldSize, nodes);
    g.start(store);
    if (const auto code = exitOrRestart(o, generation, g.monitor(), nodes)) return *code;
  }
}

}  // namespace fixres::distributed
