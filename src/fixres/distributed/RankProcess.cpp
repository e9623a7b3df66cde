// Local ranks as child processes: spawning, output relay, signals, reaping.
#include "fixres/distributed/RankProcess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "fixres/common/Error.h"

extern char** environ;

namespace fixres::distributed {
namespace {

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

pid_t spawn(const LaunchOptions& o, const RankProcess& c, int worldSize,
            const std::string& localStore, int generation, int outPipe[2], int errPipe[2]) {
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
  if (!o.jobId.empty()) env["FIXRES_JOB_ID"] = o.jobId;
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
  // The child sets its group too: whichever runs first, the group exists before a signal.
  if (pid > 0) ::setpgid(pid, pid);
  return pid;
}

// `sig` to rank c's process group (the rank and what it started), to the rank alone where the
// group cannot be signalled.
void signalGroup(const RankProcess& c, int sig) {
  if (::kill(-c.pid, sig) != 0) ::kill(c.pid, sig);
}

void closePipes(RankProcess& c) {
  for (int* fd : {&c.outFd, &c.errFd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

// Ends the ranks started so far (pid > 0) at once, waits for them, closes their pipes.
void killAndReap(std::vector<RankProcess>& children) {
  for (auto& c : children)
    if (c.pid > 0) signalGroup(c, SIGKILL);
  for (auto& c : children) {
    if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
    closePipes(c);
  }
}

}  // namespace

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

std::vector<RankProcess> startRanks(const LaunchOptions& o, int worldSize,
                                    const std::string& localStore, int generation) {
  std::vector<RankProcess> children(o.nprocPerNode);
  for (int i = 0; i < o.nprocPerNode; ++i) {
    RankProcess& c = children[i];
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
  return children;
}

bool anyRunning(const std::vector<RankProcess>& ranks) {
  for (auto& c : ranks)
    if (c.running) return true;
  return false;
}

bool anyOpen(const std::vector<RankProcess>& ranks) {
  for (auto& c : ranks)
    if (c.running || c.outFd >= 0 || c.errFd >= 0) return true;
  return false;
}

void relayOutput(std::vector<RankProcess>& ranks, int timeoutMs) {
  char buf[65536];
  std::vector<pollfd> fds;
  std::vector<std::pair<RankProcess*, bool>> owners;  // (rank, isStdout)
  for (auto& c : ranks) {
    if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0}), owners.push_back({&c, true});
    if (c.errFd >= 0) fds.push_back({c.errFd, POLLIN, 0}), owners.push_back({&c, false});
  }
  ::poll(fds.data(), fds.size(), timeoutMs);
  for (size_t k = 0; k < fds.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    RankProcess& c = *owners[k].first;
    const bool isOut = owners[k].second;
    // Rank 0's standard output is the command's result (predict's CSV, eval's table): passed on
    // as it is, so that `fixres launch ... predict` writes a valid file; every other stream's
    // lines say their rank.
    const std::string prefix =
        isOut && c.globalRank == 0 ? "" : "[rank " + std::to_string(c.globalRank) + "] ";
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
}

void signalRunning(std::vector<RankProcess>& ranks, int sig) {
  for (auto& c : ranks) {
    if (c.running) {
      signalGroup(c, SIGCONT);  // a stopped rank must wake to die
      signalGroup(c, sig);
    }
  }
}

void killLeftovers(std::vector<RankProcess>& ranks) {
  for (auto& c : ranks)  // an open pipe: a process of the group holds it, the group id is in use
    if (!c.running && (c.outFd >= 0 || c.errFd >= 0)) signalGroup(c, SIGKILL);
}

void closeLeftovers(std::vector<RankProcess>& ranks) {
  for (auto& c : ranks) {
    if (c.running) continue;
    const std::string tag = "[rank " + std::to_string(c.globalRank) + "] ";
    if (c.outFd >= 0) emit(STDOUT_FILENO, c.globalRank == 0 ? "" : tag, c.outBuf, "", 0, true);
    if (c.errFd >= 0) emit(STDERR_FILENO, tag, c.errBuf, "", 0, true);
    closePipes(c);
  }
}

int exitCodeOfStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace fixres::distributed
