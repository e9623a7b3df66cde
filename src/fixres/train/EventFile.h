// A TensorBoard event file (`events.out.tfevents.*`) written without TensorFlow: TFRecord framing
// around Event protocol buffers encoded by hand. Rank 0 of a run writes one per start (a resumed
// run starts a new file, as TensorBoard expects), with a scalar for every numeric field of each
// metrics.jsonl record (recordScalars).
//
// Framing of each record (TFRecord):
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//   `length` bytes of data, uint32 masked CRC-32C of the data          (Crc32c.h: maskedCrc32c)
// Event fields written (tensorflow/core/util/event.proto, summary.proto):
//   Event   1 wall_time double (seconds since the Unix epoch), 2 step int64,
//           3 file_version string ("brain.Event:2", the first event only),
//           5 summary Summary, 6 session_log SessionLog
//   Summary 1 value repeated Value;  Value 1 tag string, 2 simple_value float
//   SessionLog 1 status enum (START = 1): written when a run resumes, at the first step it will
//           train, so TensorBoard drops the older files' points from that step on (those written
//           past the checkpoint before the run stopped).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fixres::engine {

struct Scalar {
  std::string tag;   // "train/loss", "eval/top1"
  double value = 0;  // written as a float (simple_value)
};

// Seconds since the Unix epoch now: the wall time of an event.
double eventWallTimeNow();

class EventFile {
 public:
  // The name TensorBoard looks for: <folder>/events.out.tfevents.<unix seconds>.<hostname>, with
  // ".1", ".2" ... appended when that file exists (two starts within one second).
  static std::string newPath(const std::string& folder, double wallTime);

  // Creates `path` (exclusively, never through a symlink) and writes the file_version event.
  // OutputError naming the path and the system's reason when it cannot.
  EventFile(std::string path, double wallTime);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // One event at `step` holding `scalars` (nothing written when empty).
  void appendScalars(int64_t step, double wallTime, const std::vector<Scalar>& scalars);
  // recordScalars(record) at the record's "step"; records without an integer step are skipped.
  void appendRecord(const nlohmann::json& record, double wallTime);
  // The SessionLog START event of a resumed run, at the first step it trains.
  void appendRestart(int64_t step, double wallTime);

  const std::string& path() const { return path_; }

  // The scalars of one metrics.jsonl record: every number in it but the bookkeeping keys "step",
  // "epoch" and "iteration". Top-level numbers are training values ("train/<key>": loss, lr,
  // images_per_s, data_wait_share, ...); the numbers of a nested object <key> go to
  // "<key>/<name>" ("eval/top1", "train/top1"), or "<key>_<phase>/<name>" when the record has a
  // "phase" string ("eval_before/top1"). Booleans, strings and deeper nesting are left out. NaN
  // and infinities are kept (TensorBoard shows them).
  static std::vector<Scalar> recordScalars(const nlohmann::json& record);

  // The encoded pieces, for tests. frameRecord: `data` in TFRecord framing.
  static std::string frameRecord(const std::string& data);
  static std::string scalarEvent(double wallTime, int64_t step, const std::vector<Scalar>& scalars);
  static std::string versionEvent(double wallTime);
  static std::string restartEvent(double wallTime, int64_t step);

 private:
  // Appends one framed record as a whole: a write that fails is cut back (OutputError).
  void writeRecord(const std::string& data);

  std::string path_;
  int fd_ = -1;
};

}  // namespace fixres::engine
