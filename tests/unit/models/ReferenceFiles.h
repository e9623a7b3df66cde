// Shared by the model and weight tests: runs tests/reference/models_reference.py once per test
// process into a temporary directory (removed at exit) and compares tensors.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "fixres/models/TorchFile.h"

namespace fixres::models::testing {

inline std::string referenceScript() {
  return std::string(FIXRES_SOURCE_DIR) + "/tests/reference/models_reference.py";
}

// A fresh temporary directory, removed when the process exits.
inline std::string makeTempDir(const std::string& tag) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("fixres_" + tag + "_XXXXXX")).string();
  char* made = ::mkdtemp(tmpl.data());
  if (made == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
  static std::vector<std::string> dirs;
  static bool registered = false;
  dirs.push_back(made);
  if (!registered) {
    registered = true;
    std::atexit([] {
      for (const auto& d : dirs) std::filesystem::remove_all(d);
    });
  }
  return made;
}

// Runs a command; returns its exit status (output goes to the test log).
inline int runCommand(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// Directory with the reference files of `models_reference.py make` (made once).
inline const std::string& referenceDir() {
  static const std::string dir = [] {
    std::string d = makeTempDir("models_ref");
    std::string cmd = std::string(FIXRES_PYTHON) + " " + referenceScript() + " make " + d;
    if (runCommand(cmd) != 0) throw std::runtime_error("reference script failed: " + cmd);
    return d;
  }();
  return dir;
}

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

}  // namespace fixres::models::testing
