// Typed errors and the exit codes fixres uses everywhere (see docs/cli.md, "Exit codes").
#pragma once

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace fixres {

// Process exit codes. Stable: scripts and launchers depend on them.
enum class ExitCode : int {
  kOk = 0,
  kOther = 1,        // anything not covered below
  kUsage = 2,        // bad usage or an invalid value (flag, option, config)
  kData = 3,         // dataset or image unreadable
  kWeights = 4,      // weights or checkpoint unreadable / mismatched
  kDistributed = 5,  // peer lost, timeout, rendezvous failure
  kOutput = 6,       // an output could not be written: disk full, permission, read-only folder
  kBudget = 7,  // nothing meets the budget asked for (sweep --max-latency-ms, --min-throughput)
};

// Base of every error fixres raises on purpose. Carries the exit code main() returns.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// One error type per exit code, so that callers can catch exactly the kind they handle.
template <ExitCode kCode>
class CodedError : public Error {
 public:
  explicit CodedError(const std::string& m) : Error(kCode, m) {}
};
using UsageError = CodedError<ExitCode::kUsage>;
using DataError = CodedError<ExitCode::kData>;
using WeightsError = CodedError<ExitCode::kWeights>;
using DistributedError = CodedError<ExitCode::kDistributed>;
using OutputError = CodedError<ExitCode::kOutput>;
using BudgetError = CodedError<ExitCode::kBudget>;
using InternalError = CodedError<ExitCode::kOther>;

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Maps any exception to its exit code: fixres::Error by its code, std::bad_alloc and the rest
// to kOther. Exceptions from CLI parsing are mapped in the CLI layer before they get here.
ExitCode exitCodeOf(const std::exception& e);

// One line, no trailing newline: the message with newlines folded into "; " and LibTorch's
// appended C++ stack traces removed.
std::string oneLine(const std::string& message);

}  // namespace fixres

// FIXRES_CHECK(cond, ErrorType, parts...): throws fixres::ErrorType(parts...) when cond is false.
// Example: FIXRES_CHECK(size > 0, UsageError, "--input-size must be positive, got ", size);
#define FIXRES_CHECK(cond, ErrorType, ...)                              \
  do {                                                                  \
    if (!(cond)) {                                                      \
      throw ::fixres::ErrorType(::fixres::detail::concat(__VA_ARGS__)); \
    }                                                                   \
  } while (0)

// FIXRES_FAIL(ErrorType, parts...): throws unconditionally.
#define FIXRES_FAIL(ErrorType, ...) throw ::fixres::ErrorType(::fixres::detail::concat(__VA_ARGS__))
