// FIXRES_CHECK raises the typed error with the formatted message; exit codes follow docs/cli.md.
#include "fixres/common/Error.h"

#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

namespace fixres {
namespace {

// Runs `raise`, which must throw exactly `Expected` (neither a base nor another subclass of
// fixres::Error) carrying `code` and exactly `message`.
template <typename Expected, typename Raise>
void expectThrowsExactly(Raise raise, ExitCode code, const std::string& message) {
  try {
    raise();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_TRUE(typeid(e) == typeid(Expected)) << "threw " << typeid(e).name();
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(exitCodeOf(e), code);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// The condition is evaluated once, and the message parts only when the check fails: a passing
// check costs no formatting and runs no side effect of its message.
TEST(Error, CheckEvaluatesItsConditionOnceAndItsMessageOnlyOnFailure) {
  int conditionCalls = 0;
  int messageCalls = 0;
  auto condition = [&](bool value) {
    ++conditionCalls;
    return value;
  };
  auto detail = [&] {
    ++messageCalls;
    return std::string("a.jpg");
  };
  FIXRES_CHECK(condition(true), DataError, "never formatted: ", detail());
  EXPECT_EQ(conditionCalls, 1);
  EXPECT_EQ(messageCalls, 0);

  expectThrowsExactly<DataError>(
      [&] {
        FIXRES_CHECK(condition(false), DataError, "cannot read ", detail(), ": ", 7, " bytes");
      },
      ExitCode::kData, "cannot read a.jpg: 7 bytes");
  EXPECT_EQ(conditionCalls, 2);
  EXPECT_EQ(messageCalls, 1);
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
  EXPECT_EQ(static_cast<int>(exitCodeOf(OutputError("x"))), 6);
  EXPECT_EQ(static_cast<int>(exitCodeOf(BudgetError("x"))), 7);
  EXPECT_EQ(static_cast<int>(exitCodeOf(InternalError("x"))), 1);
  EXPECT_EQ(static_cast<int>(exitCodeOf(std::runtime_error("x"))), 1);
}

// FIXRES_FAIL throws the named type with its exit code, and the message is exactly the parts
// given, values formatted: nothing about the call site (file, line, function) is added.
TEST(Error, FailThrowsTheNamedErrorWithItsExitCodeAndExactlyTheGivenMessage) {
  const std::string path = "a.jpg";
  expectThrowsExactly<UsageError>([] { FIXRES_FAIL(UsageError, "--batch-size ", -2); },
                                  ExitCode::kUsage, "--batch-size -2");
  expectThrowsExactly<DataError>(
      [&] { FIXRES_FAIL(DataError, "bad file ", path, " at byte ", 17); }, ExitCode::kData,
      "bad file a.jpg at byte 17");
  expectThrowsExactly<WeightsError>([] { FIXRES_FAIL(WeightsError, "ratio ", 0.5, '!'); },
                                    ExitCode::kWeights, "ratio 0.5!");
  expectThrowsExactly<DistributedError>([] { FIXRES_FAIL(DistributedError, "rank ", 3, " lost"); },
                                        ExitCode::kDistributed, "rank 3 lost");
  expectThrowsExactly<InternalError>([] { FIXRES_FAIL(InternalError, "unreachable"); },
                                     ExitCode::kOther, "unreachable");
}

TEST(Error, OneLineFoldsNewlinesAndDropsLibTorchTraces) {
  EXPECT_EQ(oneLine("a\nb\n"), "a; b");
  EXPECT_EQ(oneLine("shape mismatch\nException raised from foo at bar.cpp:12\nframe #0"),
            "shape mismatch");
  EXPECT_EQ(oneLine("plain"), "plain");
}

}  // namespace
}  // namespace fixres
