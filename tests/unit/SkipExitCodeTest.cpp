// The unit-test binary's exit code for CTest: 77 when every case that ran passed but one was
// skipped (FIXRES_SKIP_UNLESS: it could not compare here), so that CTest shows the suite as
// skipped (SKIP_RETURN_CODE), not passed; a failure keeps exit code 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "Reference.h"

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

const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SkipExitCode);
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
