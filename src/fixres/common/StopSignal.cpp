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
}

int stopSignal() {
  return gStopSignal.load();
}

}  // namespace fixres
