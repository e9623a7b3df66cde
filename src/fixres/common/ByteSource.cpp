// Reading files at offsets: pread on a file descriptor, or memcpy from memory.
#include "fixres/common/ByteSource.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "fixres/common/Error.h"

namespace fixres {

ByteSource::ByteSource(const std::string& path) : name_(path) {
  // stat before open: opening a FIFO or a device could block or have side effects.
  struct stat st {};
  FIXRES_CHECK(::stat(path.c_str(), &st) == 0, WeightsError, "cannot open weights file ", path,
               ": ", std::strerror(errno));
  FIXRES_CHECK(S_ISREG(st.st_mode), WeightsError, path, " is not a regular file");
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  FIXRES_CHECK(fd_ >= 0, WeightsError, "cannot open weights file ", path, ": ",
               std::strerror(errno));
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    ::close(fd_);
    fd_ = -1;
    FIXRES_CHECK(S_ISREG(st.st_mode), WeightsError, path, " is not a regular file");
    FIXRES_FAIL(WeightsError, path, " is empty");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

ByteSource::ByteSource(const void* data, size_t size, std::string name)
    : name_(std::move(name)), size_(size), memory_(static_cast<const char*>(data)) {
  FIXRES_CHECK(size > 0, WeightsError, name_, " is empty");
}

ByteSource::ByteSource(int fd, uint64_t size, std::string name)
    : name_(std::move(name)), size_(size), fd_(fd) {}

ByteSource::ByteSource(ByteSource&& other) noexcept
    : name_(std::move(other.name_)), size_(other.size_), fd_(other.fd_), memory_(other.memory_) {
  other.fd_ = -1;
}

ByteSource::~ByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

size_t ByteSource::readSome(uint64_t offset, void* dst, size_t n) const {
  if (offset >= size_) return 0;
  n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
  if (memory_) {
    std::memcpy(dst, memory_ + offset, n);
    return n;
  }
  bool failed = false;
  const size_t done = preadSome(offset, dst, n, &failed);
  FIXRES_CHECK(!failed, WeightsError, "cannot read ", name_, ": ", std::strerror(errno));
  return done;
}

size_t ByteSource::preadSome(uint64_t offset, void* dst, size_t n, bool* failed) const {
  size_t done = 0;
  while (done < n) {
    ssize_t got =
        ::pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *failed = true;
      break;
    }
    if (got == 0) break;  // the file shrank since it was opened
    done += static_cast<size_t>(got);
  }
  return done;
}

void ByteSource::read(uint64_t offset, void* dst, size_t n, const std::string& what) const {
  FIXRES_CHECK(offset <= size_ && n <= size_ - offset, WeightsError, name_, " is truncated (", what,
               ": ", n, " bytes at offset ", offset, ", the file has ", size_, ")");
  FIXRES_CHECK(readSome(offset, dst, n) == n, WeightsError, name_, " is truncated (", what,
               ": the file shrank while it was read)");
}

std::string ByteSource::readUpTo(uint64_t offset, size_t n) const {
  std::string out(offset < size_ ? std::min<uint64_t>(n, size_ - offset) : 0, '\0');
  out.resize(readSome(offset, out.data(), out.size()));
  return out;
}

bool ByteSource::readExact(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) return false;
  if (memory_) {
    std::memcpy(dst, memory_ + offset, n);
    return true;
  }
  bool failed = false;
  return preadSome(offset, dst, n, &failed) == n;
}

}  // namespace fixres
