// SIGTERM, SIGHUP and SIGINT ask for a graceful stop (SIGHUP handled as SIGTERM, but reported as
// itself), a second signal ends the process, and nohup's ignored SIGHUP stays ignored. Each case
// runs in a child process: the flag is process-wide.
#include "fixres/common/StopSignal.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <csignal>
#include <cstdlib>

namespace fixres {
namespace {

// Exits 0 when the stop flags read `stop` and `received` after `sig` was raised once.
[[noreturn]] void raiseAndCheck(int sig, int stop, int received) {
  installStopHandlers();
  std::raise(sig);
  ::_exit(stopSignal() == stop && receivedStopSignal() == received ? 0 : 1);
}

TEST(StopSignalDeathTest, EachStopSignalRaisesTheFlag) {
  EXPECT_EXIT(raiseAndCheck(SIGTERM, SIGTERM, SIGTERM), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(raiseAndCheck(SIGINT, SIGINT, SIGINT), ::testing::ExitedWithCode(0), "");
  // The terminal closed: stop as for SIGTERM (what the training loop acts on), exit as SIGHUP.
  EXPECT_EXIT(raiseAndCheck(SIGHUP, SIGTERM, SIGHUP), ::testing::ExitedWithCode(0), "");
}

TEST(StopSignalDeathTest, ASecondSignalEndsTheProcess) {
  EXPECT_EXIT(
      {
        installStopHandlers();
        std::raise(SIGHUP);
        std::raise(SIGHUP);
        ::_exit(0);
      },
      ::testing::KilledBySignal(SIGHUP), "");
}

TEST(StopSignalDeathTest, SighupIgnoredByNohupStaysIgnored) {
  EXPECT_EXIT(
      {
        std::signal(SIGHUP, SIG_IGN);
        installStopHandlers();
        std::raise(SIGHUP);
        ::_exit(stopSignal() == 0 && receivedStopSignal() == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopSignal, Names) {
  EXPECT_STREQ(stopSignalName(SIGHUP), "SIGHUP");
  EXPECT_STREQ(stopSignalName(SIGTERM), "SIGTERM");
  EXPECT_STREQ(stopSignalName(SIGINT), "SIGINT");
}

}  // namespace
}  // namespace fixres
