// What fixres_client and fixres_served share: the request's encoding and the server's address.
//
// A request is one length-prefixed block of NUL-terminated strings: the working folder, the
// umask, the ignored and the blocked signals (as decimal bit sets), the argument count, the
// arguments, then the environment; descriptors 0, 1 and 2 travel with its first bytes
// (SCM_RIGHTS). The reply is the command's exit status as decimal text and a newline, 128 + the
// signal that ended it.
#pragma once

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace served {

constexpr const char* kServeFlag = "--serve-requests-at";
constexpr uint32_t kMaxRequest = 64u << 20;

// Stable across processes (std::hash is not promised to be): FNV-1a, 64 bits.
inline uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Read when the program loads (the C library, OpenMP, OpenBLAS, the loader): a server started
// with other values would not stand for a fresh start, so they are part of its address. The
// variables fixres reads itself (FIXRES_*) are read in main, after the fork: not keyed.
inline bool keyedVariable(const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('='));
  if (name.rfind("FIXRES_", 0) == 0) return false;
  return name != "PWD" && name != "OLDPWD" && name != "SHLVL" && name != "_";
}

// The limits a shell's ulimit sets: a child cannot raise a hard limit above its server's.
inline std::string limitsText() {
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

// The message that carries a request's length, with descriptors 0, 1 and 2 beside it.
struct Envelope {
  uint32_t size = 0;
  iovec part{&size, sizeof(size)};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr message{};

  Envelope() {
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
  }
  Envelope(const Envelope&) = delete;
  Envelope& operator=(const Envelope&) = delete;
};

inline bool sendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

inline bool readAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

inline uint64_t signalBits(const sigset_t& set) {
  uint64_t bits = 0;
  for (int s = 1; s < 64; ++s)
    if (sigismember(&set, s) == 1) bits |= uint64_t{1} << s;
  return bits;
}

}  // namespace served
