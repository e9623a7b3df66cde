// What fixres_client and fixres_served share: the request's encoding.
//
// A request is one length-prefixed block of NUL-terminated strings: the working folder, the
// umask, the ignored and the blocked signals (as decimal bit sets), the argument count, the
// arguments, then the environment; descriptors 0, 1 and 2 travel with its first bytes
// (SCM_RIGHTS). The reply is the command's exit status as decimal text and a newline, 128 + the
// signal that ended it.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace served {

constexpr const char* kServeFlag = "--serve-requests-at";
constexpr uint32_t kMaxRequest = 64u << 20;

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

}  // namespace served
