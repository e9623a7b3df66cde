// Local process launcher with output prefixing, signal forwarding and fail-fast supervision.
#include "fixres/distributed/Launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
#include <map>
#include <optional>

#include "fixres/common/Error.h"
#include "fixres/common/FolderLock.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/distributed/RestartCoordinator.h"
#include "fixres/distributed/World.h"

extern char** environ;

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

struct Child {
  int localRank = 0;
  int globalRank = 0;
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  std::string outBuf, errBuf;
  bool running = true;
  int exitCode = 0;
};

void emit(int fd, const std::string& prefix, std::string& buffer, const char* data, ssize_t n,
          bool flushAll) {
  buffer.append(data, static_cast<size_t>(n));
  size_t start = 0, nl;
  while ((nl = buffer.find('\n', start)) != std::string::npos) {
    std::string body = buffer.substr(start, nl - start + 1);
    // The rank's own log lines already say "[rank r] ": do not say it twice.
    if (body.compare(0, prefix.size(), prefix) == 0) body.erase(0, prefix.size());
    std::string line = prefix + body;
    (void)!::write(fd, line.data(), line.size());
    start = nl + 1;
  }
  buffer.erase(0, start);
  if (flushAll && !buffer.empty()) {
    std::string line = prefix + buffer + "\n";
    (void)!::write(fd, line.data(), line.size());
    buffer.clear();
  }
}

pid_t spawn(const LaunchOptions& o, const Child& c, int worldSize, const std::string& localStore,
            int generation, int outPipe[2], int errPipe[2]) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["RANK"] = std::to_string(c.globalRank);
  env["WORLD_SIZE"] = std::to_string(worldSize);
  env["LOCAL_RANK"] = std::to_string(c.localRank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(o.nprocPerNode);
  env["GROUP_RANK"] = std::to_string(o.nodeRank);
  env["MASTER_ADDR"] = o.masterAddr;
  env["MASTER_PORT"] = std::to_string(o.masterPort);
  env["FIXRES_JOB_ID"] = o.jobId;
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(generation);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(o.maxRestarts);
  if (!localStore.empty()) env["FIXRES_LOCAL_STORE"] = localStore;
  std::vector<std::string> envStrings;
  for (auto& [k, v] : env) envStrings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args{o.executable};
  args.insert(args.end(), o.arguments.begin(), o.arguments.end());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = ::getpid();
  pid_t pid = fork();
  if (pid == 0) {
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::dup2(errPipe[1], STDERR_FILENO);
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    // Own process group: a Ctrl-C on the terminal reaches the launcher only, which forwards it
    // once (a rank's second SIGINT/SIGTERM means "stop now"). Die with the launcher.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::execve(argv[0], argv.data(), envp.data());
    std::string msg = "fixres: error: cannot start " + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(1);
  }
  return pid;
}

// Bounds of the launch flags: far beyond any machine (1,024 local ranks, 65,536 nodes), close
// enough that a typo fails at once instead of starting ranks for minutes.
constexpr int kMaxLocalRanks = 1024;
constexpr int kMaxNodes = 65536;
constexpr double kMaxGraceSeconds = 3600;
constexpr int kMaxRestarts = 1000;

// Two pipes per rank stay open in the launcher: raises the soft limit on open files when it is
// too low for that, or refuses the rank count naming the limit.
void reserveFileDescriptors(int ranks) {
  const rlim_t needed = static_cast<rlim_t>(2 * ranks + 64);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= needed) return;
  if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= needed) {
    lim.rlim_cur = needed;
    if (::setrlimit(RLIMIT_NOFILE, &lim) == 0) return;
  }
  FIXRES_FAIL(UsageError, "--nproc-per-node ", ranks, " needs ", needed,
              " open files in the launcher, more than this process may open (ulimit -n ",
              lim.rlim_max, ")");
}

// Ends the ranks started so far (pid > 0) at once, waits for them, closes their pipes.
void killAndReap(std::vector<Child>& children) {
  for (auto& c : children)
    if (c.pid > 0) ::kill(c.pid, SIGKILL);
  for (auto& c : children) {
    if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
    for (int* fd : {&c.outFd, &c.errFd}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }
}

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

int codeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// How a generation of ranks ended: the launcher returns exitCode, or restarts every rank.
struct Generation {
  bool restart = false;
  int exitCode = 0;
  RankFailure cause;  // what made them restart
};

// A rank's failure worth a restart: any non-zero exit or death by a signal, except a usage error
// (exit 2: the same arguments fail again). A stop the launcher forwarded is no failure.
bool restartable(int code) {
  return code != 0 && code != static_cast<int>(ExitCode::kUsage);
}

// Starts the local ranks of `generation`, relays their output and supervises them until all
// have exited: a failing rank, a forwarded signal or (several nodes) a failure another node
// announced stops them all.
Generation runGeneration(const LaunchOptions& o, int generation, int worldSize,
                         const std::string& localStore, RestartCoordinator* coordinator) {
  const bool mayRestart = generation < o.maxRestarts;
  std::vector<Child> children(o.nprocPerNode);
  for (int i = 0; i < o.nprocPerNode; ++i) {
    Child& c = children[i];
    c.localRank = i;
    c.globalRank = o.nodeRank * o.nprocPerNode + i;
    int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
    const bool piped = ::pipe2(outPipe, O_CLOEXEC) == 0 && ::pipe2(errPipe, O_CLOEXEC) == 0;
    if (piped) c.pid = spawn(o, c, worldSize, localStore, generation, outPipe, errPipe);
    const int err = errno;
    for (int fd : {outPipe[1], errPipe[1]})
      if (fd >= 0) ::close(fd);
    c.outFd = outPipe[0];
    c.errFd = errPipe[0];
    if (!piped || c.pid < 0) {
      // Never keep pid -1: signalling it reaches every process this user may signal.
      c.pid = -1;
      killAndReap(children);
      FIXRES_FAIL(InternalError, "cannot start rank ", c.globalRank, " (", piped ? "fork" : "pipe",
                  "): ", std::strerror(err));
    }
  }

  Generation out;
  bool stopping = false;
  bool decided = false;  // out says how the generation ends
  auto stopDeadline = std::chrono::steady_clock::time_point::max();
  auto stopAll = [&](int sig) {
    for (auto& c : children) {
      if (c.running) {
        ::kill(c.pid, SIGCONT);  // a stopped rank must wake to die
        ::kill(c.pid, sig);
      }
    }
  };
  auto startStopping = [&] {
    stopping = true;
    stopAll(SIGTERM);
    stopDeadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(o.graceSeconds * 1000));
  };
  // The store may be gone (node 0's launcher): this node stops its ranks and says so.
  auto storeLost = [&](const Error& e) {
    errorLine(std::string(e.what()) + "; stopping the ranks of this node");
    out = Generation{false, static_cast<int>(ExitCode::kDistributed), {}};
    decided = true;
    if (!stopping) startStopping();
  };
  auto nextPoll = std::chrono::steady_clock::now();

  char buf[65536];
  auto anyOpen = [&] {
    for (auto& c : children)
      if (c.running || c.outFd >= 0 || c.errFd >= 0) return true;
    return false;
  };
  while (anyOpen()) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Child*, bool>> owners;  // (child, isStdout)
    for (auto& c : children) {
      if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0}), owners.push_back({&c, true});
      if (c.errFd >= 0) fds.push_back({c.errFd, POLLIN, 0}), owners.push_back({&c, false});
    }
    ::poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = *owners[k].first;
      bool isOut = owners[k].second;
      std::string prefix = "[rank " + std::to_string(c.globalRank) + "] ";
      ssize_t n = ::read(fds[k].fd, buf, sizeof(buf));
      if (n > 0) {
        emit(isOut ? STDOUT_FILENO : STDERR_FILENO, prefix, isOut ? c.outBuf : c.errBuf, buf, n,
             false);
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        emit(isOut ? STDOUT_FILENO : STDERR_FILENO, prefix, isOut ? c.outBuf : c.errBuf, buf, 0,
             true);
        ::close(fds[k].fd);
        (isOut ? c.outFd : c.errFd) = -1;
      }
    }
    // A signal from the user first: a rank that it made exit is then no failure to restart.
    if (int sig = gForwardSignal.exchange(0)) {
      log::warn("launch: forwarding ", stopSignalName(sig), " to the ranks");
      if (!stopping) {
        stopping = true;
        out = Generation{false, 128 + sig, {}};
        stopDeadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(o.graceSeconds * 1000));
        if (coordinator && !decided) announceSignal(*coordinator, generation, o.nodeRank, sig);
      } else if (out.restart) {
        log::warn("launch: no restart after ", stopSignalName(sig));
        out.restart = false;
        // The other nodes must not wait for this one.
        if (coordinator) announceSignal(*coordinator, generation, o.nodeRank, sig);
      }
      decided = true;
      stopAll(sig);
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& c : children) {
        if (c.pid != pid) continue;
        c.running = false;
        c.exitCode = codeOf(status);
        if (c.exitCode == 0 || decided || stopping) continue;
        RankFailure mine{o.nodeRank, c.globalRank, c.exitCode,
                         mayRestart && restartable(c.exitCode)};
        RankFailure counts = mine;
        if (coordinator) {
          try {
            counts = coordinator->announce(generation, mine);
          } catch (const Error& e) {
            storeLost(e);
            continue;
          }
        }
        decided = true;
        if (counts.restart && mine.restart) {
          out = Generation{true, c.exitCode, counts};
          log::warn("launch: rank ", c.globalRank, " exited with code ", c.exitCode,
                    "; stopping the other ranks to restart them");
        } else {
          out = Generation{false, c.exitCode, mine};
          errorLine(detail::concat("rank ", c.globalRank, " exited with code ", c.exitCode,
                                   "; stopping the other ranks"));
        }
        startStopping();
      }
    }
    // Several nodes: a failure another node announced stops this node's ranks too.
    if (coordinator && !decided && std::chrono::steady_clock::now() >= nextPoll) {
      nextPoll = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
      try {
        if (auto f = coordinator->announced(generation)) {
          decided = true;
          if (f->restart) {
            out = Generation{true, f->code, *f};
            log::warn("launch: on node ", f->node, ", rank ", f->rank, " exited with code ",
                      f->code, "; stopping the ranks of this node to restart them");
          } else {
            out = Generation{false, static_cast<int>(ExitCode::kDistributed), *f};
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
    if (stopping && std::chrono::steady_clock::now() > stopDeadline) {
      stopAll(SIGKILL);
      stopDeadline = std::chrono::steady_clock::time_point::max();
    }
  }
  if (decided) return out;
  // Every local rank succeeded. Several nodes: the others may still fail and restart all.
  if (coordinator) {
    if (auto f = coordinator->waitAllDone(generation, signalled); f && f->restart)
      return Generation{true, f->code, *f};
    if (int sig = gForwardSignal.exchange(0)) {
      // The user stopped this launcher while it waited for the others: they stop too.
      log::warn("launch: ", stopSignalName(sig), " while waiting for the other nodes' ranks");
      announceSignal(*coordinator, generation, o.nodeRank, sig);
      return Generation{false, 128 + sig, {}};
    }
  }
  return Generation{false, 0, {}};
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
  reserveFileDescriptors(o.nprocPerNode);
  if (o.masterPort == 0) {
    FIXRES_CHECK(o.nnodes == 1, UsageError, "--master-port is required with --nnodes > 1");
    o.masterPort = findFreePort();
  }
  FIXRES_CHECK(o.nnodes == 1 || o.maxRestarts == 0 || o.masterPort < 65535, UsageError,
               "--master-port ", o.masterPort,
               " leaves no port for the launchers' store (--master-port + 1, with --max-restarts "
               "on several nodes)");
  if (o.jobId.empty()) o.jobId = "launch-" + std::to_string(::getpid());
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
            o.masterPort, ", job ", o.jobId,
            o.maxRestarts > 0 ? detail::concat(", up to ", o.maxRestarts, " restart(s)") : "");
  for (int generation = 0;; ++generation) {
    // A fresh file store per generation: the killed ranks' keys must not mislead the new ones.
    const std::string store = localStore.empty() || generation == 0
                                  ? localStore
                                  : detail::concat(localStore, "-", generation);
    const Generation g =
        runGeneration(o, generation, worldSize, store, coordinator ? &*coordinator : nullptr);
    if (!g.restart) {
      if (coordinator) coordinator->leave();
      return g.exitCode;
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
                            ") after rank ", g.cause.rank, " exited with ", g.cause.code));
  }
}

}  // namespace fixres::distributed
