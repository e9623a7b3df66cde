// FIXRES_CHECK raises the typed error with the formatted message; exit codes follow docs/cli.md.
#include "fixres/common/Error.h"

#include <gtest/gtest.h>

namespace fixres {
namespace {

TEST(Error, CheckPassesWhenConditionHolds) {
  EXPECT_NO_THROW(FIXRES_CHECK(1 + 1 == 2, UsageError, "never"));
}

TEST(Error, CheckThrowsTypedErrorWithFormattedMessage) {
  int size = -3;
  try {
    FIXRES_CHECK(size > 0, UsageError, "--input-size must be positive, got ", size);
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--input-size must be positive, got -3");
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

TEST(Error, ExitCodesAreTheDocumentedNumbers) {
  EXPECT_EQ(static_cast<int>(exitCodeOf(UsageError("x"))), 2);
  EXPECT_EQ(static_cast<int>(exitCodeOf(DataError("x"))), 3);
  EXPECT_EQ(static_cast<int>(exitCodeOf(WeightsError("x"))), 4);
  EXPECT_EQ(static_cast<int>(exitCodeOf(DistributedError("x"))), 5);
  EXPECT_EQ(static_cast<int>(exitCodeOf(InternalError("x"))), 1);
  EXPECT_EQ(static_cast<int>(exitCodeOf(std::runtime_error("x"))), 1);
}

TEST(Error, FailAlwaysThrows) {
  EXPECT_THROW(FIXRES_FAIL(DataError, "bad file ", "a.jpg"), DataError);
}

TEST(Error, OneLineFoldsNewlinesAndDropsLibTorchTraces) {
  EXPECT_EQ(oneLine("a\nb\n"), "a; b");
  EXPECT_EQ(oneLine("shape mismatch\nException raised from foo at bar.cpp:12\nframe #0"),
            "shape mismatch");
  EXPECT_EQ(oneLine("plain"), "plain");
}

}  // namespace
}  // namespace fixres
