// metrics.jsonl of a run folder: one JSON object per line (progress records with their step,
// evaluations with their epoch). Appends are whole lines: a write that fails (disk full) is cut
// back, so the file never ends inside a record. A resumed run first rewrites the file atomically
// to its whole, readable records up to the checkpoint it resumes from, so no step is listed twice.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fixres::engine {

// The largest metrics.jsonl read back (resume, `fixres plot`): 1 GiB, some 7 million progress
// records of ~150 bytes.
inline constexpr uint64_t kMetricsLogMaxBytes = uint64_t(1) << 30;

class MetricsLog {
 public:
  // Where a run resumes: what it has done so far.
  struct Position {
    int64_t globalStep = 0;  // optimizer steps
    int64_t epochsDone = 0;  // epochs whose end-of-epoch evaluation is done
  };

  // Opens `path` for appending: a fresh run (no position) starts an empty file, a resumed one
  // keeps what keptRecords() keeps (dropped records are counted in a log line). DataError naming
  // the file when it cannot be read (also when it is not a regular file, refused without blocking,
  // or larger than kMetricsLogMaxBytes), OutputError (exit code 6) when it cannot be written.
  MetricsLog(std::string path, std::optional<Position> resumeAt);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Appends `record` as one line. OutputError naming the file when it cannot be written; the
  // file then holds what it held before.
  void append(const nlohmann::json& record);

  // The lines of `text` a run resuming at `at` keeps: whole lines (ended by a newline) holding a
  // JSON object; of those, epoch records ("epoch" with "eval" or "train") of epochs up to
  // at.epochsDone, other records with a "step" up to at.globalStep, and any other.
  // `dropped` counts the other lines.
  static std::string keptRecords(const std::string& text, Position at, size_t& dropped);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace fixres::engine
