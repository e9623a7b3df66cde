// Test helpers: temporary folders and the Python reference scripts (tests/reference/*.py, run
// with Debian's /usr/bin/python3, which has torch, torchvision and PIL).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace fixres::testing {

inline std::string makeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const char* dir = mkdtemp(buf.data());
  if (!dir) throw std::runtime_error("mkdtemp failed for " + pattern);
  return dir;
}

// Runs tests/reference/<script> with `args`; returns its stdout, or "" and a test failure.
inline std::string runReference(const std::string& script, const std::string& args,
                                bool* ok = nullptr) {
  if (ok) *ok = false;
  const std::string cmd = std::string(FIXRES_PYTHON) + " " + FIXRES_SOURCE_DIR +
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

// Runs tests/reference/<script> once per (script text, arguments) and machine: the outputs stay
// in a folder under the temp directory, shared by every test process (ctest runs each test in
// its own process; the scripts take seconds). "{dir}" in argsTemplate becomes that folder; the
// script's stdout is returned. A lock file serialises concurrent first runs.
inline std::string cachedReference(const std::string& script, const std::string& argsTemplate,
                                   std::string* dirOut = nullptr) {
  const std::string scriptPath = std::string(FIXRES_SOURCE_DIR) + "/tests/reference/" + script;
  const size_t key =
      std::hash<std::string>{}(readText(scriptPath) + "\n" + argsTemplate + "\n" + FIXRES_PYTHON);
  std::ostringstream name;
  name << "fixres_ref_" << std::hex << key;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name.str();
  if (dirOut) *dirOut = dir.string();
  const std::string lockPath = dir.string() + ".lock";
  const int fd = open(lockPath.c_str(), O_CREAT | O_RDWR, 0644);
  if (fd >= 0) flock(fd, LOCK_EX);
  const std::filesystem::path done = dir / ".complete";
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

}  // namespace fixres::testing
