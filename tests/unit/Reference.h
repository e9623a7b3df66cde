// Test helpers: temporary folders and the Python reference scripts (tests/reference/*.py, run
// with Debian's /usr/bin/python3, which has torch, torchvision and PIL).
#pragma once

#include <gtest/gtest.h>

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
inline std::string runReference(const std::string& script, const std::string& args) {
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
  return output;
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
