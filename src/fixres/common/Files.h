// File helpers. Every failure to write an output (a file or a folder fixres makes) is an
// OutputError, exit code 6, whatever the output: one rule for disk full, permission denied, a
// read-only file system or a path through a regular file. File helpers: atomic writes (temp file in
// the same folder, created exclusively without following symlinks, fsync, rename, fsync of the
// folder) and whole-file reads.
#pragma once

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

// Reads a whole file; DataError naming the path when it cannot be read.
std::vector<char> readFile(const std::string& path);

// mkdir -p; OutputError naming the path on failure.
void makeDirectories(const std::string& path);

bool fileExists(const std::string& path);

// Checks, before any work whose result goes to `path`, that its folder exists, is a folder and is
// writable: else an OutputError "cannot write <what> <path>: ...". (The write can still fail.)
void checkOutputFolder(const std::string& path, const std::string& what);

}  // namespace fixres
