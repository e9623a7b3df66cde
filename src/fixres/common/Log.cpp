// Rank-aware logging implementation.
#include "fixres/common/Log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_set>

namespace fixres::log {
namespace {
std::atomic<int> gRank{0};
std::atomic<int> gWorld{1};
std::atomic<bool> gAllRanks{false};
std::atomic<int> gLevel{static_cast<int>(Level::kInfo)};
std::mutex gMutex;
std::mutex gOnceMutex;
std::unordered_set<std::string> gOnce;
}  // namespace

void setRank(int rank, int worldSize) {
  gRank = rank;
  gWorld = worldSize;
}
void setAllRanks(bool allRanks) {
  gAllRanks = allRanks;
}
void setLevel(Level l) {
  gLevel = static_cast<int>(l);
}
Level level() {
  return static_cast<Level>(gLevel.load());
}

bool firstTime(const std::string& key) {
  std::lock_guard<std::mutex> lock(gOnceMutex);
  return gOnce.insert(key).second;
}

void write(Level l, const std::string& line) {
  if (l <= Level::kInfo && gRank != 0 && !gAllRanks) return;
  std::string prefix;
  if (gWorld > 1) prefix = "[rank " + std::to_string(gRank.load()) + "] ";
  if (l == Level::kWarn) prefix += "warning: ";
  if (l == Level::kError) prefix += "error: ";
  std::lock_guard<std::mutex> lock(gMutex);
  std::fprintf(stderr, "%s%s\n", prefix.c_str(), line.c_str());
  std::fflush(stderr);
}

}  // namespace fixres::log
