// One run per folder: an advisory lock on `<folder>/.lock` held for the life of the object, so
// that two runs never write into the same folder; and, once it is held, the removal of the
// temporary files that writers killed mid-write left there.
#pragma once

#include <optional>
#include <string>

namespace fixres {

// An exclusive flock(2) on `<folder>/.lock`, taken without waiting. The kernel releases it when
// the holder exits in any way (a crash or SIGKILL never leaves a stale lock). The lock belongs to
// the open file, so it holds against another FolderLock of the same process too, and it holds
// whatever path reaches the folder (symlinks, relative paths): it is taken on the file itself.
// The file holds the holder's "<pid> <host>" as text, for the message of the next comer.
//
// Movable, not copyable.
class FolderLock {
 public:
  // Creates `folder` (mkdir -p) and locks it. UsageError naming the folder and the holder's pid
  // when another process holds it; DataError naming the file when the folder or the lock file
  // cannot be created or opened (a symlink at `<folder>/.lock` is refused, not followed). A file
  // system without locks (ENOLCK, EOPNOTSUPP) gives a warning and an object that holds nothing.
  explicit FolderLock(const std::string& folder);
  // The same for a folder that exists (it is not created), but a lock held by another process
  // is not an error: nullopt, and `holder` (when given) gets the holder's text.
  static std::optional<FolderLock> tryLock(const std::string& folder,
                                           std::string* holder = nullptr);
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& folder() const { return folder_; }
  const std::string& lockPath() const { return path_; }

  // Removes from the folder (not its subfolders) the regular files named like the temporaries of
  // AtomicFile (`.<name>.tmp-<16 hex digits>`): files of writers that were killed before their
  // rename. Only while the lock is held (a live writer's temporary is never touched): returns 0
  // and removes nothing otherwise. Returns the number removed; each one is logged.
  int removeStaleTemporaries() const;

 private:
  FolderLock() = default;
  // Locks; false (and the holder's text) when another process holds the lock.
  bool lock(const std::string& folder, std::string* holder);

  std::string folder_;
  std::string path_;
  int fd_ = -1;
};

// The "<pid> <host>" text a FolderLock writes into its lock file for this process.
std::string lockHolderText();

// The holder text in `<folder>/.lock`, "" when the file is missing, empty or unreadable.
std::string readLockHolder(const std::string& folder);

// True for a file name of AtomicFile's temporaries: `.<name>.tmp-` and 16 hexadecimal digits.
bool isAtomicTemporaryName(const std::string& name);

}  // namespace fixres
