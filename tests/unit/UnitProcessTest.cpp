// Process-wide settings of the unit-test binary:
// - LibTorch's intra-op thread count from FIXRES_THREADS (CTest sets 1), as the CLI sets it: a
//   reduction's order, so its last float digits, depends on the thread count, and LibTorch's
//   default differs between builds (1 on Debian's 1.13, all cores on 2.11);
// - the exit code for CTest: 77 when every case that ran passed but one was skipped
//   (FIXRES_SKIP_UNLESS: it could not compare here), so that CTest shows the suite as skipped
//   (SKIP_RETURN_CODE), not passed; a failure keeps exit code 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "Reference.h"
#include "fixres/common/Runtime.h"

namespace {

class SkipExitCode : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (unit.Passed() && unit.skipped_test_count() > 0) {
      std::printf("%d case(s) skipped: exit code 77 (skipped)\n", unit.skipped_test_count());
      std::fflush(stdout);
      std::exit(77);
    }
  }
};

// FIXRES_THREADS as a count; unset or not a number: 1.
int threadsFromEnvironment() {
  const char* v = std::getenv("FIXRES_THREADS");
  const int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : 1;
}

const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SkipExitCode);
  fixres::configureThreads(threadsFromEnvironment());
  return true;
}();

}  // namespace

TEST(SkipExitCode, RequireListIsReadWordByWord) {
  ASSERT_TRUE(kRegistered);
  ::setenv("FIXRES_REQUIRE", "onnxruntime  timm-pypi oracles", 1);
  EXPECT_TRUE(fixres::testing::requiredHere("timm-pypi"));
  EXPECT_TRUE(fixres::testing::requiredHere("oracles"));
  EXPECT_FALSE(fixres::testing::requiredHere("timm"));
  EXPECT_FALSE(fixres::testing::requiredHere("onnx"));
  ::unsetenv("FIXRES_REQUIRE");
  EXPECT_FALSE(fixres::testing::requiredHere("oracles"));
}

TEST(UnitProcess, IntraOpThreadsFollowFixresThreads) {
  ASSERT_TRUE(kRegistered);
  EXPECT_EQ(at::get_num_threads(), threadsFromEnvironment());
}
