// Atomic file replacement: a temporary file in the destination folder, written, synced and
// renamed over the destination, so readers see the old file or the new one, never a part.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fixres {

// One atomic replacement of `path`, written in chunks.
//
// The constructor creates `<folder of path>/.<name>.tmp-<random>` exclusively, never through a
// symlink (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 & ~umask). write() appends (buffered in 1 MiB;
// larger chunks go straight to the file). commit() flushes, fsyncs, closes, renames the
// temporary over `path` and fsyncs the folder (best effort: some file systems refuse it).
//
// Nothing here throws: the first failure is kept (failedStep(), error(), reason()) and every
// later call does nothing, so write() can serve a C callback that cannot unwind. Callers turn a
// failure into their own error type. An AtomicFile destroyed before a successful commit()
// removes its temporary file; any previous file at `path` is then as it was. Not thread-safe.
class AtomicFile {
 public:
  // The step that failed first.
  enum class Step { kNone, kCreate, kWrite, kSync, kClose, kRename };

  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends `size` bytes from `data` (not kept after the call). No effect after a failure.
  void write(const void* data, size_t size);
  // Publishes the file at `path`. Returns false (and removes the temporary on destruction) when
  // this or any earlier step failed.
  bool commit();

  bool ok() const { return step_ == Step::kNone; }
  Step failedStep() const { return step_; }
  // The bare cause of the failure: the system error ("No space left on device"), "short write",
  // "not a file name" or "no free temporary file name"; "" when ok().
  const std::string& error() const { return error_; }
  // The cause with its step, for messages: "cannot create a temporary file in D: E",
  // "fsync: E", "close: E", "rename to P: E"; for a failed write the bare cause.
  const std::string& reason() const { return reason_; }

  const std::string& path() const { return path_; }
  // The temporary file (the last name tried when creating it failed).
  const std::string& tempPath() const { return tmp_; }
  const std::string& folder() const { return dir_; }

 private:
  void fail(Step step, std::string error, std::string reason);
  void flush();
  void writeRaw(const char* data, size_t size);

  std::string path_;
  std::string dir_;
  std::string tmp_;
  int fd_ = -1;
  bool created_ = false;    // the temporary exists and is ours to remove
  bool committed_ = false;  // renamed over path_
  std::vector<char> buffer_;
  Step step_ = Step::kNone;
  std::string error_;
  std::string reason_;
};

}  // namespace fixres
