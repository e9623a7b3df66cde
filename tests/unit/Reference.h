// Test helpers: temporary folders, the Python reference scripts (tests/reference/*.py, run with
// Debian's /usr/bin/python3, which has torch, torchvision and PIL) and their cached outputs, the
// model reference files of models_reference.py, and tensor comparison.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres::testing {

// A fresh folder <temp dir>/<prefix>XXXXXX, removed with its contents when the process exits.
inline std::string makeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed for " + pattern);
  static std::vector<std::string> made;
  static const bool registered = [] {
    std::atexit([] {
      for (const auto& dir : made) {
        std::error_code ignored;  // a test may have removed it already
        std::filesystem::remove_all(dir, ignored);
      }
    });
    return true;
  }();
  (void)registered;
  made.push_back(pattern);
  return pattern;
}

// True when FIXRES_REQUIRE (a space-separated list: CI lists what it installs) names `need`.
inline bool requiredHere(const std::string& need) {
  const char* list = std::getenv("FIXRES_REQUIRE");
  std::istringstream words(list ? list : "");
  for (std::string w; words >> w;)
    if (w == need) return true;
  return false;
}

// A comparison that cannot run here for want of `need` (oracles, onnxruntime, ...): the case is
// skipped, and CTest shows its suite as skipped (SKIP_REGULAR_EXPRESSION), unless FIXRES_REQUIRE
// names `need`: then it fails. Use in a test body.
#define FIXRES_SKIP_UNLESS(have, need, why)                                           \
  do {                                                                                \
    if (!(have)) {                                                                    \
      if (::fixres::testing::requiredHere(need))                                      \
        FAIL() << "not compared, and FIXRES_REQUIRE lists " << (need) << ": " << why; \
      GTEST_SKIP() << "for want of " << (need) << ": " << why;                        \
    }                                                                                 \
  } while (false)

// Runs a shell command; returns its exit status (its output goes to the test log).
inline int runCommand(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// Runs tests/reference/<script> with `args`; returns its stdout, or "" and a test failure.
inline std::string runReference(const std::string& script, const std::string& args,
                                bool* ok = nullptr) {
  if (ok) *ok = false;
  const std::string cmd = std::string(FIXRES_PYTHON_COMMAND) + " " + FIXRES_SOURCE_DIR +
                          "/tests/reference/" + script + " " + args;
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "cannot run " << cmd;
    return output;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  const int rc = pclose(pipe);
  if (rc != 0) {
    ADD_FAILURE() << "reference script failed (" << rc << "): " << cmd;
    return "";
  }
  if (ok) *ok = true;
  return output;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The marker cachedReference() leaves in its folder once the script has succeeded.
inline constexpr const char* kReferenceComplete = ".complete";

// Runs tests/reference/<script> once per (script text, arguments) and machine: the outputs stay
// in a folder under the temp directory, shared by every test process (ctest runs each test in
// its own process; the scripts take seconds). "{dir}" in argsTemplate becomes that folder; the
// script's stdout is returned. A lock file serialises concurrent first runs.
inline std::string cachedReference(const std::string& script, const std::string& argsTemplate,
                                   std::string* dirOut = nullptr) {
  const std::string scriptPath = std::string(FIXRES_SOURCE_DIR) + "/tests/reference/" + script;
  const size_t key = std::hash<std::string>{}(readText(scriptPath) + "\n" + argsTemplate + "\n" +
                                              FIXRES_PYTHON_COMMAND);
  std::ostringstream name;
  name << "fixres_ref_" << std::hex << key;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name.str();
  if (dirOut) *dirOut = dir.string();
  const std::string lockPath = dir.string() + ".lock";
  const int fd = open(lockPath.c_str(), O_CREAT | O_RDWR, 0644);
  if (fd >= 0) flock(fd, LOCK_EX);
  const std::filesystem::path done = dir / kReferenceComplete;
  const std::filesystem::path out = dir / ".stdout";
  if (!std::filesystem::exists(done)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::string args = argsTemplate;
    for (size_t pos; (pos = args.find("{dir}")) != std::string::npos;) {
      args.replace(pos, 5, dir.string());
    }
    bool ok = false;
    const std::string text = runReference(script, args, &ok);
    if (ok) {
      std::ofstream(out, std::ios::binary) << text;
      std::ofstream(done) << "ok";
    }
  }
  if (fd >= 0) {
    flock(fd, LOCK_UN);
    close(fd);
  }
  return readText(out.string());
}

inline std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<float> readFloats(const std::string& path) {
  const std::vector<uint8_t> bytes = readBytes(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// Runs f() with the process's file size limit at `bytes` (a write beyond it fails with EFBIG, as
// a full disk fails it with ENOSPC) and SIGXFSZ ignored; both are restored afterwards, also when
// f throws. A limit that cannot be set is a test failure (f is then not run).
template <typename F>
void withFileSizeLimit(uint64_t bytes, F&& f) {
  auto* oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  const bool got = ::getrlimit(RLIMIT_FSIZE, &old) == 0;
  rlimit small = old;
  small.rlim_cur = bytes;
  const bool set = got && ::setrlimit(RLIMIT_FSIZE, &small) == 0;
  EXPECT_TRUE(set) << "cannot set the file size limit";
  auto restore = [&] {
    if (set) ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);
  };
  try {
    if (set) f();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

// ---- model reference files ---------------------------------------------------------------

inline std::string referenceScript() {
  return std::string(FIXRES_SOURCE_DIR) + "/tests/reference/models_reference.py";
}

// The folder holding the files of `models_reference.py make` (weights, inputs and expected
// outputs per architecture, bad weight files), made once per version of the script and shared
// by the test processes (see cachedReference()). std::runtime_error when the script fails.
inline const std::string& referenceDir() {
  static const std::string dir = [] {
    std::string made;
    cachedReference("models_reference.py", "make {dir}", &made);
    if (!std::filesystem::exists(std::filesystem::path(made) / kReferenceComplete)) {
      throw std::runtime_error("reference script failed: " + referenceScript() + " make " + made);
    }
    return made;
  }();
  return dir;
}

// dict[key] of a reference file read with readTorchFile (a dict of tensors).
inline at::Tensor referenceTensor(const c10::IValue& dict, const std::string& key) {
  auto d = dict.toGenericDict();
  auto it = d.find(c10::IValue(key));
  if (it == d.end()) throw std::runtime_error("reference file lacks " + key);
  return it->value().toTensor();
}

// ||a - b|| / ||b|| in double precision.
inline double relErr(const at::Tensor& a, const at::Tensor& b) {
  auto ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  return (ad - bd).norm().item<double>() / std::max(bd.norm().item<double>(), 1e-30);
}

// Expects a WeightsError (exit code 4) whose message contains every fragment; prints the message.
template <typename F>
void expectWeightsError(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const WeightsError& e) {
    EXPECT_EQ(static_cast<int>(exitCodeOf(e)), 4);
    std::string msg = e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
    std::cout << "[ message ] " << msg.substr(0, 400) << "\n";
  }
}

}  // namespace fixres::testing
