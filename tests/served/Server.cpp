// fixres_served: the fixres command line (cli::runCli, as apps/fixres.cpp), and the server behind
// fixres_client (Client.cpp says why). `fixres_served --serve-requests-at SOCKET` waits for
// requests; for each it forks a handler that reads the request, forks the command's process and
// answers with its exit status, or ends the command when the client goes away. The command's
// process becomes the client's (arguments, working folder, environment, umask, signals, standard
// streams) and runs runCli as a fresh start would, LibTorch's static set-up already done. Ends
// after 2 idle minutes, or when its socket is removed or replaced.
#include "Wire.h"

#include <dirent.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "fixres/cli/Command.h"

namespace {

constexpr int kIdleMs = 120 * 1000;

struct Request {
  std::vector<char> data;  // the strings below point into it, for the life of the process
  int fds[3] = {-1, -1, -1};
};

bool receive(int conn, Request& r) {
  served::Envelope e;
  if (::recvmsg(conn, &e.message, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof(e.size)))
    return false;
  cmsghdr* header = CMSG_FIRSTHDR(&e.message);
  if (!header || header->cmsg_type != SCM_RIGHTS || header->cmsg_len != CMSG_LEN(3 * sizeof(int)))
    return false;
  std::memcpy(r.fds, CMSG_DATA(header), sizeof(r.fds));
  if (e.size == 0 || e.size > served::kMaxRequest) return false;
  r.data.resize(e.size);
  return served::readAll(conn, r.data.data(), e.size);
}

std::vector<char*> fields(Request& r) {
  std::vector<char*> out;
  for (size_t at = 0; at < r.data.size(); at += std::strlen(r.data.data() + at) + 1)
    out.push_back(r.data.data() + at);
  return out;
}

void applySignals(uint64_t ignored, uint64_t blocked) {
  sigset_t mask;
  ::sigemptyset(&mask);
  for (int s = 1; s < 64; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    std::signal(s, (ignored >> s) & 1 ? SIG_IGN : SIG_DFL);
    if ((blocked >> s) & 1) ::sigaddset(&mask, s);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
}

// In the command's process: becomes the client's and runs the command line; never returns.
[[noreturn]] void runCommand(Request& r) {
  for (int target = 0; target < 3; ++target) ::dup2(r.fds[target], target);  // clears CLOEXEC
  for (int fd : r.fds)
    if (fd > 2) ::close(fd);
  std::vector<char*> f = fields(r);
  const size_t argc = f.size() >= 5 ? std::strtoul(f[4], nullptr, 10) : 0;
  if (f.size() < 5 + argc || argc == 0 || ::chdir(f[0]) != 0) {
    std::fprintf(stderr, "fixres_served: a malformed request, or no folder %s\n",
                 f.empty() ? "" : f[0]);
    std::_Exit(125);
  }
  ::umask(static_cast<mode_t>(std::strtoul(f[1], nullptr, 10)));
  applySignals(std::strtoull(f[2], nullptr, 10), std::strtoull(f[3], nullptr, 10));
  ::clearenv();
  for (size_t i = 5 + argc; i < f.size(); ++i) ::putenv(f[i]);
  std::vector<char*> argv(f.begin() + 5, f.begin() + 5 + static_cast<long>(argc));
  argv.push_back(nullptr);
  std::exit(fixres::cli::runCli(static_cast<int>(argc), argv.data()));  // as a return from main
}

// In the handler (a fork of the server): one request, one command.
[[noreturn]] void handle(int conn) {
  std::signal(SIGCHLD, SIG_DFL);
  Request r;
  if (!receive(conn, r)) std::_Exit(0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(conn);
    runCommand(r);
  }
  for (int fd : r.fds) ::close(fd);
  if (pid < 0) std::_Exit(0);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  pollfd watch[2] = {{conn, POLLIN, 0}, {pidfd, POLLIN, 0}};
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    int n = ::poll(watch, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 20);
    char c;
    if (n > 0 && (watch[0].revents & (POLLIN | POLLHUP)) && ::recv(conn, &c, 1, MSG_PEEK) <= 0) {
      ::kill(pid, SIGKILL);  // the client was ended: so is its command
      ::waitpid(pid, &status, 0);
      std::_Exit(0);
    }
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string reply = std::to_string(code) + "\n";
  served::sendAll(conn, reply.data(), reply.size());
  std::_Exit(0);
}

// Forking is sound only from a single thread (the others would be missing in the child). With
// OPENBLAS_NUM_THREADS above 1, OpenBLAS starts its threads when it loads: no serving then.
bool singleThreaded() {
  int tasks = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++tasks;
    ::closedir(d);
  }
  return tasks == 1;
}

ino_t identity(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 ? st.st_ino : 0;
}

int serve(const char* path) {
  if (!singleThreaded()) return 3;
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string temp = std::string(path) + "." + std::to_string(::getpid());
  if (temp.size() >= sizeof(addr.sun_path)) return 2;
  std::memcpy(addr.sun_path, temp.c_str(), temp.size() + 1);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 64) != 0 || ::rename(temp.c_str(), path) != 0)
    return 2;
  const ino_t mine = identity(path);
  std::signal(SIGCHLD, SIG_IGN);  // handlers reaped by the kernel
  for (;;) {
    pollfd p{listener, POLLIN, 0};
    const int n = ::poll(&p, 1, kIdleMs);
    // Replaced by another server (two clients started one each), or idle: no new client can
    // connect from here on; those that connected just now are served before the end.
    const bool replaced = identity(path) != mine;
    if (n == 0 && !replaced) ::unlink(path);
    while (::poll(&p, 1, 0) > 0) {
      int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) break;
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(listener);
        handle(conn);
      }
      ::close(conn);
    }
    if (n == 0 || replaced) return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], served::kServeFlag) == 0) return serve(argv[2]);
  return fixres::cli::runCli(argc, argv);
}
