// Shared by the model and weight tests: reference files from tests/reference/models_reference.py
// (made once, see referenceDir()), temporary directories, tensor comparison.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
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

// Directory with the reference files of `models_reference.py make`. ctest runs each test in its
// own process, so the files are made once per version of the script and shared: a directory
// named after the user and the script's hash in the temp dir, made under a lock and published
// by rename.
inline const std::string& referenceDir() {
  static const std::string dir = [] {
    std::ifstream in(referenceScript(), std::ios::binary);
    std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (script.empty()) throw std::runtime_error("cannot read " + referenceScript());
    char tag[64];
    std::snprintf(tag, sizeof(tag), "fixres_models_ref_%u_%016zx", unsigned(::getuid()),
                  std::hash<std::string>{}(script));
    const std::string final = (std::filesystem::temp_directory_path() / tag).string();
    if (std::filesystem::exists(final + "/done")) return final;
    int lock = ::open((final + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + final);
    if (!std::filesystem::exists(final + "/done")) {
      std::string tmp = final + ".tmp-XXXXXX";
      if (::mkdtemp(tmp.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmp);
      std::string cmd = std::string(FIXRES_PYTHON) + " " + referenceScript() + " make " + tmp;
      if (runCommand(cmd) != 0) {
        std::filesystem::remove_all(tmp);
        ::close(lock);
        throw std::runtime_error("reference script failed: " + cmd);
      }
      std::ofstream(tmp + "/done") << "ok\n";
      std::filesystem::remove_all(final);
      std::filesystem::rename(tmp, final);
    }
    ::close(lock);
    return final;
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
