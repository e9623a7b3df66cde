// Time to open a large image folder: a plain scan, the first open with the file index on (scan
// plus writing the index) and a later open that reads the index (folder stamps checked). Median
// of a few runs each; with --drop-caches, the kernel's page, dentry and inode caches are dropped
// before every run (root only), as after a reboot or on a cold network client.
// See docs/performance.md. Usage: file_index_bench ROOT [RUNS] [--drop-caches]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/data/Dataset.h"

namespace {

namespace fs = std::filesystem;
using fixres::data::FileIndexOptions;
using fixres::data::FileIndexReport;

bool dropCaches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  f.flush();
  return static_cast<bool>(f);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: file_index_bench ROOT [RUNS] [--drop-caches]\n";
    return 2;
  }
  const std::string root = argv[1];
  const int runs = argc > 2 && argv[2][0] != '-' ? std::max(1, std::atoi(argv[2])) : 3;
  const bool drop = std::strcmp(argv[argc - 1], "--drop-caches") == 0;
  FileIndexOptions on;
  on.enabled = true;
  on.racySeconds = 0.0;  // the generated tree is seconds old
  const std::string indexPath = fixres::data::indexPathNextTo(root);
  auto timed = [&](const FileIndexOptions& o, FileIndexReport* report, size_t* n) {
    if (drop && !dropCaches()) {
      std::cerr << "cannot write /proc/sys/vm/drop_caches (needs root)\n";
      std::exit(1);
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto ds = fixres::data::openImageFolder(root, o, report);
    *n = ds->size();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    std::vector<double> plain, cold, warm;
    size_t n = 0;
    for (int r = 0; r < runs; ++r) {
      fs::remove(indexPath);
      plain.push_back(timed(FileIndexOptions{}, nullptr, &n));
      FileIndexReport built, read;
      cold.push_back(timed(on, &built, &n));
      warm.push_back(timed(on, &read, &n));
      if (!built.saved || !read.usedIndex) {
        std::cerr << "index not used: " << built.why << " / " << read.why << "\n";
        return 1;
      }
    }
    std::error_code ec;
    const auto indexBytes = fs::file_size(indexPath, ec);
    fs::remove(indexPath);
    std::printf(
        "files=%zu runs=%d drop_caches=%d index_bytes=%llu plain_s=%.3f build_s=%.3f "
        "cached_s=%.3f speedup=%.1f\n",
        n, runs, drop ? 1 : 0, static_cast<unsigned long long>(indexBytes), median(plain),
        median(cold), median(warm), median(plain) / median(warm));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
