// Async-signal-safe stop flag.
#include "fixres/common/StopSignal.h"

#include <atomic>
#include <csignal>

namespace fixres {
namespace {

std::atomic<int> gStopSignal{0};

extern "C" void onStopSignal(int sig) {
  int expected = 0;
  if (!gStopSignal.compare_exchange_strong(expected, sig)) {
    // Second signal: no more patience.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void installStopHandlers() {
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
  return sig == SIGHUP ? SIGTERM : sig;
}

int receivedStopSignal() {
  return gStopSignal.load();
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
