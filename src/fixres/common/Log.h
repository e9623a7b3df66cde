// Rank-aware logging: lines go to stderr, tagged "[rank r]" when the world has more than one
// process; info() prints on rank 0 only unless every rank is asked to talk.
#pragma once

#include <string>

#include "fixres/common/Error.h"

namespace fixres::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void setRank(int rank, int worldSize);
void setAllRanks(bool allRanks);  // info() from every rank, not only rank 0
void setLevel(Level level);
Level level();

// Writes one line (thread-safe). Rank filtering applies to kDebug and kInfo only.
void write(Level level, const std::string& line);

template <typename... Args>
void debug(Args&&... args) {
  if (level() <= Level::kDebug) write(Level::kDebug, detail::concat(std::forward<Args>(args)...));
}
template <typename... Args>
void info(Args&&... args) {
  if (level() <= Level::kInfo) write(Level::kInfo, detail::concat(std::forward<Args>(args)...));
}
template <typename... Args>
void warn(Args&&... args) {
  write(Level::kWarn, detail::concat(std::forward<Args>(args)...));
}
// True the first time `key` is passed in this process, false after (thread-safe).
bool firstTime(const std::string& key);
// A warning about one thing (a file, keyed by its path) printed at most once per process, however
// many epochs, threads or repeated samples meet it again.
template <typename... Args>
void warnOnce(const std::string& key, Args&&... args) {
  if (firstTime(key)) warn(std::forward<Args>(args)...);
}
template <typename... Args>
void error(Args&&... args) {
  write(Level::kError, detail::concat(std::forward<Args>(args)...));
}

}  // namespace fixres::log
