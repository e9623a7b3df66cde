// SIGTERM, SIGHUP and SIGINT ask for a graceful stop (SIGHUP handled as SIGTERM, but reported as
// itself), a second signal ends the process, and nohup's ignored SIGHUP stays ignored. Each case
// runs in a child process: the flag is process-wide.
#include "fixres/common/StopSignal.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

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

// Work that never reaches a point where it polls the stop (a step stuck in a loop) no longer needs
// a second signal: the watchdog ends the process with 128 + signal once the grace has passed.
TEST(StopSignalDeathTest, AStopNobodyPollsEndsTheProcessAfterTheGrace) {
  EXPECT_EXIT(
      {
        installStopHandlers();
        setMinimumStopGrace(0.3);
        std::raise(SIGTERM);
        const auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
        }
        ::_exit(0);  // not reached: the watchdog exits first
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "did not reach a point where it can stop");
}

TEST(StopSignalDeathTest, APolledStopOrProgressKeepsTheWatchdogAway) {
  EXPECT_EXIT(
      {
        installStopHandlers();
        // A 1 s grace against progress every 50 ms: a 20x margin for a busy machine's scheduler.
        setMinimumStopGrace(1.0);
        std::raise(SIGINT);
        // Progress reported more often than the grace, for three graces: the process is left
        // alone.
        const auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          noteProgress(0.01);
        }
        // Then the stop is polled: the watchdog stands down for good (two graces without
        // progress).
        const int seen = stopSignal();
        std::this_thread::sleep_for(std::chrono::milliseconds(2000));
        ::_exit(seen == SIGINT ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopSignal, TheGraceIsThreeTimesTheLongestStepAndAtLeastTheMinimum) {
  EXPECT_EQ(stopGraceMs(), kMinimumStopGraceSeconds * 1000);
  noteProgress(2.0);
  EXPECT_EQ(stopGraceMs(), kMinimumStopGraceSeconds * 1000);
  noteProgress(30.0);
  EXPECT_EQ(stopGraceMs(), 90000);
  noteProgress(1.0);
  EXPECT_EQ(stopGraceMs(), 90000);
}

TEST(StopSignal, Names) {
  EXPECT_STREQ(stopSignalName(SIGHUP), "SIGHUP");
  EXPECT_STREQ(stopSignalName(SIGTERM), "SIGTERM");
  EXPECT_STREQ(stopSignalName(SIGINT), "SIGINT");
}

}  // namespace
}  // namespace fixres
