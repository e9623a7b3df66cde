// fixres_client FIXRES ARGS...: runs `FIXRES ARGS...` as the integration tests' run() would, in a
// process forked from a fixres_served (beside this program) that has loaded LibTorch already.
// Each fixres start costs about 0.55 s of CPU before main (the loader binding Debian LibTorch's
// ~290 libraries, LibTorch registering its operators), and the suite starts several hundred.
//
// The command gets this process's arguments, working folder, environment, umask, ignored and
// blocked signals and standard streams; its exit status (128 + the signal that ended it) is this
// process's. One server per build and per start-time environment (keyedVariable below), started on
// first use, ends after 2 idle minutes. If this process is ended, so is the command.
// FIXRES_SERVED=0, no server beside this program, or a server that cannot start: FIXRES itself is
// run.
#include "Wire.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>

extern char** environ;

namespace {

// Stable across processes (std::hash is not promised to be): FNV-1a, 64 bits.
uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Read when the program loads (the C library, OpenMP, OpenBLAS, the loader): a server started
// with other values would not stand for a fresh start, so they are part of its address. The
// variables fixres reads itself (FIXRES_*) are read in main, after the fork: not keyed.
bool keyedVariable(const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('='));
  if (name.rfind("FIXRES_", 0) == 0) return false;
  return name != "PWD" && name != "OLDPWD" && name != "SHLVL" && name != "_";
}

// The limits a shell's ulimit sets: a child cannot raise a hard limit above its server's.
std::string limitsText() {
  const int kinds[] = {RLIMIT_AS,    RLIMIT_CORE,   RLIMIT_CPU,   RLIMIT_DATA,
                       RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_STACK, RLIMIT_NPROC};
  std::string text;
  for (int kind : kinds) {
    rlimit r{};
    ::getrlimit(kind, &r);
    text += std::to_string(r.rlim_cur) + "/" + std::to_string(r.rlim_max) + " ";
  }
  return text;
}

uint64_t signalBits(const sigset_t& set) {
  uint64_t bits = 0;
  for (int s = 1; s < 64; ++s)
    if (sigismember(&set, s) == 1) bits |= uint64_t{1} << s;
  return bits;
}

[[noreturn]] void direct(char** argv) {
  ::execv(argv[1], argv + 1);
  std::fprintf(stderr, "fixres_client: cannot run %s: %s\n", argv[1], std::strerror(errno));
  std::_Exit(127);
}

std::string serverProgram(const char* self) {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string exe = n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(self);
  return exe.substr(0, exe.rfind('/') + 1) + "fixres_served";
}

// The socket's path: one per server program (its file's identity), user and keyed environment.
std::string socketPath(const std::string& server) {
  struct stat st {};
  if (::stat(server.c_str(), &st) != 0) return "";
  std::vector<std::string> keyed;
  for (char** e = environ; *e; ++e)
    if (keyedVariable(*e)) keyed.emplace_back(*e);
  std::sort(keyed.begin(), keyed.end());
  std::string key = server + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_size) + " " +
                    limitsText();
  for (const auto& e : keyed) key += "\n" + e;
  const char* tmp = std::getenv("TMPDIR");
  std::string folder =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/fixres-served-" + std::to_string(::getuid());
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return "";
  struct stat fs {};
  if (::stat(folder.c_str(), &fs) != 0 || fs.st_uid != ::getuid()) return "";
  char name[40];
  std::snprintf(name, sizeof(name), "/%016llx%08llx.sock",
                static_cast<unsigned long long>(fnv1a(key)),
                static_cast<unsigned long long>(fnv1a(key, 7) & 0xffffffffu));
  std::string path = folder + name;
  return path.size() < sizeof(sockaddr_un::sun_path) ? path : "";
}

int connectTo(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  ::close(fd);
  return -1;
}

// Detached, holding none of our descriptors: a test runner waits for its tests' output pipes.
pid_t startServer(const std::string& server, const std::string& path) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setsid();
  int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  if (::close_range(3, ~0u, 0) != 0)
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
  ::execl(server.c_str(), server.c_str(), served::kServeFlag, path.c_str(), nullptr);
  std::_Exit(127);
}

// A server that could not serve (served/Server.cpp: more than one thread before main) leaves a
// mark for 10 minutes: the clients after it run the binary at once instead of trying again.
bool refusedLately(const std::string& mark) {
  struct stat st {};
  return ::stat(mark.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < 600;
}

int connectOrStart(const std::string& server, const std::string& path) {
  int fd = connectTo(path);
  if (fd >= 0) return fd;
  const std::string mark = path + ".refused";
  if (refusedLately(mark)) return -1;
  pid_t pid = startServer(server, path);
  for (int i = 0; i < 3000; ++i) {  // 60 s
    fd = connectTo(path);
    if (fd >= 0) return fd;
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
      fd = connectTo(path);  // it ended: served by another one, or by none
      if (fd < 0) ::close(::open(mark.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      return fd;
    }
    timespec pause{0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  return -1;
}

std::string request(int argc, char** argv) {
  char cwd[4096];
  if (!::getcwd(cwd, sizeof(cwd))) return "";
  mode_t mask = ::umask(022);
  ::umask(mask);
  sigset_t blocked, ignored;
  ::sigprocmask(SIG_SETMASK, nullptr, &blocked);
  ::sigemptyset(&ignored);
  for (int s = 1; s < 64; ++s) {
    struct sigaction action {};
    if (::sigaction(s, nullptr, &action) == 0 && action.sa_handler == SIG_IGN)
      ::sigaddset(&ignored, s);
  }
  std::string body;
  auto add = [&body](const std::string& field) { body.append(field).push_back('\0'); };
  add(cwd);
  add(std::to_string(mask));
  add(std::to_string(signalBits(ignored)));
  add(std::to_string(signalBits(blocked)));
  add(std::to_string(argc - 1));
  for (int i = 1; i < argc; ++i) add(argv[i]);
  for (char** e = environ; *e; ++e) add(*e);
  return body;
}

bool sendRequest(int fd, const std::string& body) {
  served::Envelope e;
  e.size = static_cast<uint32_t>(body.size());
  cmsghdr* header = CMSG_FIRSTHDR(&e.message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(3 * sizeof(int));
  const int fds[3] = {0, 1, 2};
  std::memcpy(CMSG_DATA(header), fds, sizeof(fds));
  if (::sendmsg(fd, &e.message, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(e.size))) return false;
  return served::sendAll(fd, body.data(), body.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fixres_client FIXRES [ARGS...]\n");
    return 2;
  }
  const char* mode = std::getenv("FIXRES_SERVED");
  const std::string server = serverProgram(argv[0]);
  if ((mode && std::strcmp(mode, "0") == 0) || ::access(server.c_str(), X_OK) != 0) direct(argv);
  const std::string path = socketPath(server);
  const std::string body = request(argc, argv);
  if (path.empty() || body.empty() || body.size() > served::kMaxRequest) direct(argv);
  int fd = connectOrStart(server, path);
  if (fd < 0 || !sendRequest(fd, body)) direct(argv);
  std::string reply;
  char c = 0;
  while (served::readAll(fd, &c, 1) && c != '\n') reply.push_back(c);
  if (c != '\n' || reply.empty()) {
    std::fprintf(stderr, "fixres_client: the server ended before the command did\n");
    return 70;
  }
  return std::atoi(reply.c_str());
}
