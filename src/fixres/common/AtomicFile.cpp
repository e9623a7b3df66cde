// Atomic file replacement (temporary file, fsync, rename, folder fsync).
#include "fixres/common/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

namespace fixres {
namespace {

constexpr size_t kBufferBytes = size_t(1) << 20;

std::string errnoText() {
  return std::strerror(errno);
}

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ (uint64_t(::getpid()) << 32));
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  auto slash = path_.rfind('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
  std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  if (base.empty()) {
    fail(Step::kCreate, "not a file name", "not a file name");
    return;
  }
  // A random name, retried on collision: a stale temporary of a killed writer never blocks.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = dir_ + "/." + base + ".tmp-" + randomSuffix();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) {
      std::string why = errnoText();
      fail(Step::kCreate, why, "cannot create a temporary file in " + dir_ + ": " + why);
      return;
    }
  }
  if (fd_ < 0) {
    fail(Step::kCreate, "no free temporary file name", "no free temporary file name");
    return;
  }
  created_ = true;
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (created_ && !committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(Step step, std::string error, std::string reason) {
  if (step_ != Step::kNone) return;
  step_ = step;
  error_ = std::move(error);
  reason_ = std::move(reason);
}

void AtomicFile::write(const void* data, size_t size) {
  if (!ok()) return;
  const char* p = static_cast<const char*>(data);
  if (buffer_.size() + size > kBufferBytes) flush();
  if (size >= kBufferBytes) {
    writeRaw(p, size);
  } else {
    buffer_.insert(buffer_.end(), p, p + size);
  }
}

void AtomicFile::flush() {
  if (!buffer_.empty()) writeRaw(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::writeRaw(const char* data, size_t size) {
  while (size > 0 && ok()) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? errnoText() : "short write";
      fail(Step::kWrite, why, why);
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

bool AtomicFile::commit() {
  if (!ok()) return false;
  flush();
  if (ok() && ::fsync(fd_) != 0) {
    std::string why = errnoText();
    fail(Step::kSync, why, "fsync: " + why);
  }
  int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    std::string why = errnoText();
    fail(Step::kClose, why, "close: " + why);
  }
  if (ok() && ::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::string why = errnoText();
    fail(Step::kRename, why, "rename to " + path_ + ": " + why);
  }
  if (!ok()) {
    ::unlink(tmp_.c_str());
    created_ = false;
    return false;
  }
  committed_ = true;
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on directories
    ::close(dfd);
  }
  return true;
}

}  // namespace fixres
