// Advisory lock of a run folder (flock on <folder>/.lock) and the clean-up it makes safe.
#include "fixres/common/FolderLock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"

namespace fixres {
namespace {

constexpr size_t kHexDigits = 16;  // AtomicFile's random suffix

std::string lockErrnoText(int err) {
  return std::strerror(err);
}

// The holder text of the lock file at `fd`, "" when empty or unreadable.
std::string holderText(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// The same, waiting a little for it: a holder writes it just after taking the lock, so a
// newcomer that lost the race may find the file empty for a moment.
std::string readHolder(int fd) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::string text = holderText(fd);
    if (!text.empty()) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

// "pid 1234 on host h" from "1234 h".
std::string describeHolder(const std::string& text) {
  if (text.empty()) return "pid unknown";
  const auto space = text.find(' ');
  if (space == std::string::npos) return "pid " + text;
  return "pid " + text.substr(0, space) + " on host " + text.substr(space + 1);
}

}  // namespace

std::string readLockHolder(const std::string& folder) {
  const int fd =
      ::open((folder + "/.lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  std::string text = holderText(fd);
  ::close(fd);
  return text;
}

std::string lockHolderText() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::strcpy(host, "unknown");
  return std::to_string(::getpid()) + " " + host;
}

bool isAtomicTemporaryName(const std::string& name) {
  static const std::string kTag = ".tmp-";
  if (name.size() < 1 + 1 + kTag.size() + kHexDigits || name[0] != '.') return false;
  const size_t tag = name.size() - kHexDigits - kTag.size();
  if (name.compare(tag, kTag.size(), kTag) != 0) return false;
  for (size_t i = name.size() - kHexDigits; i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

FolderLock::FolderLock(const std::string& folder) {
  makeDirectories(folder);
  std::string holder;
  FIXRES_CHECK(lock(folder, &holder), UsageError, "run folder ", folder,
               " is in use by another run (", describeHolder(holder), ", lock file ", path_,
               "); wait for that run to end, or give this one another job id or folder");
}

std::optional<FolderLock> FolderLock::tryLock(const std::string& folder, std::string* holder) {
  std::optional<FolderLock> l(FolderLock{});
  if (!l->lock(folder, holder)) return std::nullopt;
  return l;
}

FolderLock::FolderLock(FolderLock&& other) noexcept
    : folder_(std::move(other.folder_)), path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

FolderLock::~FolderLock() {
  // Closing the only descriptor of the open file releases the lock. The file stays: removing it
  // would let a newcomer lock a fresh file while another still holds the old one.
  if (fd_ >= 0) ::close(fd_);
}

bool FolderLock::lock(const std::string& folder, std::string* holder) {
  folder_ = folder;
  path_ = folder + "/.lock";
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  FIXRES_CHECK(fd >= 0, DataError, "cannot open the lock file ", path_, ": ", lockErrnoText(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    FIXRES_FAIL(DataError, "cannot lock the folder ", folder_, ": ", path_,
                " is not a regular file");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      if (holder) *holder = readHolder(fd);
      ::close(fd);
      return false;
    }
    ::close(fd);
    FIXRES_CHECK(err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS, DataError,
                 "cannot lock the folder ", folder_, " (", path_, "): ", lockErrnoText(err));
    log::warn("the file system of ", folder_, " does not support locks (", lockErrnoText(err),
              "): the folder is used without a lock");
    return true;
  }
  fd_ = fd;
  const std::string text = lockHolderText() + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    log::warn("cannot write this process's id into ", path_, ": ", lockErrnoText(errno),
              " (the folder is locked all the same)");
  return true;
}

int FolderLock::removeStaleTemporaries() const {
  if (!held()) return 0;
  DIR* dir = ::opendir(folder_.c_str());
  FIXRES_CHECK(dir != nullptr, DataError, "cannot list ", folder_, ": ", lockErrnoText(errno));
  int removed = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (!isAtomicTemporaryName(name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (::unlinkat(::dirfd(dir), name.c_str(), 0) == 0) {
      ++removed;
      log::info("removed ", folder_, "/", name, " (", st.st_size,
                " bytes): the temporary file of a write that was interrupted");
    } else {
      log::warn("cannot remove the stale temporary file ", folder_, "/", name, ": ",
                lockErrnoText(errno));
    }
  }
  ::closedir(dir);
  return removed;
}

}  // namespace fixres
