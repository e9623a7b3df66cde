// Async-signal-safe stop flag, and the watchdog that bounds how long a stop can wait.
#include "fixres/common/StopSignal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

namespace fixres {
namespace {

std::atomic<int> gStopSignal{0};
std::atomic<bool> gAcknowledged{false};
std::atomic<int64_t> gLastProgressMs{0};  // steady clock, ms; 0: none yet
std::atomic<int64_t> gLongestUnitMs{0};   // the longest unit of work reported
std::atomic<int64_t> gMinimumGraceMs{kMinimumStopGraceSeconds * 1000};
int gWakeFds[2] = {-1, -1};  // the handler writes one byte; the watchdog reads it

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

extern "C" void onStopSignal(int sig) {
  int expected = 0;
  if (!gStopSignal.compare_exchange_strong(expected, sig)) {
    // Second signal: no more patience.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (gWakeFds[1] >= 0) {
    const char byte = 1;
    const ssize_t ignored = ::write(gWakeFds[1], &byte, 1);  // async-signal-safe
    (void)ignored;
  }
}

// Waits for the first stop signal, then for the stop to be acknowledged; ends the process with
// 128 + signal when no progress was reported for the grace period.
void watchdog() {
  char byte;
  while (::read(gWakeFds[0], &byte, 1) < 0 && errno == EINTR) {
  }
  const int64_t signalledMs = nowMs();
  for (;;) {
    if (gAcknowledged.load()) return;
    const int64_t grace = stopGraceMs();
    const int64_t since = nowMs() - std::max(signalledMs, gLastProgressMs.load());
    if (since >= grace) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(100, grace - since)));
  }
  if (gAcknowledged.load()) return;
  const int sig = gStopSignal.load();
  char line[256];
  const int n = std::snprintf(line, sizeof line,
                              "fixres: error: stopping on %s: the work under way did not reach a "
                              "point where it can stop within %.0f s; exiting now (the last "
                              "checkpoint, if any, is kept)\n",
                              stopSignalName(sig), stopGraceMs() / 1000.0);
  if (n > 0) {
    const ssize_t ignored = ::write(STDERR_FILENO, line, static_cast<size_t>(n));
    (void)ignored;
  }
  ::_exit(128 + (sig == SIGHUP ? SIGHUP : sig));
}

}  // namespace

void installStopHandlers() {
  if (gWakeFds[0] < 0 && ::pipe2(gWakeFds, O_CLOEXEC) == 0) std::thread(watchdog).detach();
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  // nohup (SIGHUP ignored from the start) means "keep running when the terminal goes".
  struct sigaction old {};
  if (::sigaction(SIGHUP, nullptr, &old) == 0 && old.sa_handler != SIG_IGN)
    ::sigaction(SIGHUP, &sa, nullptr);
}

int stopSignal() {
  const int sig = gStopSignal.load();
  if (sig != 0) gAcknowledged.store(true);  // the caller is at a point where it can stop
  return sig == SIGHUP ? SIGTERM : sig;
}

int receivedStopSignal() {
  return gStopSignal.load();
}

void noteProgress(double unitSeconds) {
  const auto ms = static_cast<int64_t>(std::max(0.0, unitSeconds) * 1000.0);
  int64_t longest = gLongestUnitMs.load();
  while (ms > longest && !gLongestUnitMs.compare_exchange_weak(longest, ms)) {
  }
  gLastProgressMs.store(nowMs());
}

int64_t stopGraceMs() {
  return std::max(gMinimumGraceMs.load(), 3 * gLongestUnitMs.load());
}

void setMinimumStopGrace(double seconds) {
  gMinimumGraceMs.store(static_cast<int64_t>(seconds * 1000.0));
}

const char* stopSignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    default:
      return "a signal";
  }
}

}  // namespace fixres
