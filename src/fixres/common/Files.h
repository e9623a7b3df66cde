// File helpers. Every failure to write an output (a file or a folder fixres makes) is an
// OutputError, exit code 6, whatever the output: one rule for disk full, permission denied, a
// read-only file system or a path through a regular file. File helpers: atomic writes (temp file in
// the same folder, created exclusively without following symlinks, fsync, rename, fsync of the
// folder) and whole-file reads: every file fixres reads whole goes through readRegularFile, which
// refuses, without blocking, anything but a regular file (a FIFO, socket, device or folder) and a
// file above the caller's bound, before a byte is loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fixres {

// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a part.
// On any failure (disk full, permission) the temp file is removed, the old file is untouched,
// and an OutputError (exit code 6) naming the path and the system error is thrown. Permissions
// follow the umask.
void writeFileAtomic(const std::string& path, const std::string& bytes);

// Plain (non-atomic, no fsync) write for bulk outputs whose folder is published atomically;
// OutputError naming the path and the system error on failure.
void writeFile(const std::string& path, const std::string& bytes);

// Appends `bytes` to `fd` (a file of `path` opened for appending) as a whole: when a write fails
// partway (disk full, the file size limit), the file is cut back to its length before, so it never
// ends inside a record. OutputError naming the path and the system error, with "(and the partial
// <what> could not be removed)" when the cut fails too.
void appendWhole(int fd, const std::string& path, const std::string& bytes,
                 const std::string& what);

// Opens `path` for reading when it is a regular file of at most `maxBytes` bytes: opened with
// O_NONBLOCK (a FIFO in its place cannot block the open), checked with fstat, then switched back
// to blocking reads. Returns the descriptor (the caller closes it) and sets *size; -1 otherwise,
// with the reason, one line naming `what` and the path, in *why ("cannot read shard index
// /d/shards.json: a FIFO, not a regular file").
int openRegularFile(const std::string& path, uint64_t maxBytes, const std::string& what,
                    uint64_t* size, std::string* why);

// The whole of the regular file at `path` (openRegularFile's checks) into *bytes; false with the
// reason in *why when it is refused or cannot be read (also when it does not fit in memory).
bool tryReadRegularFile(const std::string& path, uint64_t maxBytes, const std::string& what,
                        std::string* bytes, std::string* why);

// The same, throwing ErrorType (the caller's context decides: DataError for a data set's file,
// OutputError for a run's own output read back, ...) with the one-line reason.
template <typename ErrorType>
std::string readRegularFile(const std::string& path, uint64_t maxBytes, const std::string& what) {
  std::string bytes, why;
  if (!tryReadRegularFile(path, maxBytes, what, &bytes, &why)) throw ErrorType(why);
  return bytes;
}

// The bound of readFile: 4 GiB.
inline constexpr uint64_t kReadFileMaxBytes = uint64_t(4) << 30;

// Reads a whole regular file of at most kReadFileMaxBytes; DataError naming the path when it cannot
// be read, is not a regular file or is larger.
std::vector<char> readFile(const std::string& path);

// mkdir -p; OutputError naming the path on failure.
void makeDirectories(const std::string& path);

bool fileExists(const std::string& path);

// Checks, before any work whose result goes to `path`, that its folder exists, is a folder and is
// writable: else an OutputError "cannot write <what> <path>: ...". (The write can still fail.)
void checkOutputFolder(const std::string& path, const std::string& what);

// The names in folder `dir` (not its subfolders), sorted; "" and a reason in *why when it cannot
// be listed.
std::vector<std::string> folderEntries(const std::string& dir, std::string* why);

// "a, b, c, ... (7 entries)": the first `shown` names, and how many there are when more.
std::string entriesText(const std::vector<std::string>& names, size_t shown = 3);

}  // namespace fixres
