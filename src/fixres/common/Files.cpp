// Atomic and plain whole-file writes, whole appends, bounded whole-file reads, folders.
#include "fixres/common/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"

namespace fixres {
namespace {
std::string sysError() {
  return std::strerror(errno);
}
}  // namespace

void writeFileAtomic(const std::string& path, const std::string& bytes) {
  AtomicFile file(path);
  FIXRES_CHECK(file.failedStep() != AtomicFile::Step::kCreate, OutputError, "cannot create ",
               file.tempPath().empty() ? path : file.tempPath(), ": ", file.error());
  file.write(bytes.data(), bytes.size());
  if (file.commit()) return;
  FIXRES_CHECK(file.failedStep() != AtomicFile::Step::kRename, OutputError, "cannot rename ",
               file.tempPath(), " to ", path, ": ", file.error());
  FIXRES_FAIL(OutputError, "cannot write ", path, ": ", file.error(), " (previous file kept)");
}

void writeFile(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  FIXRES_CHECK(fd >= 0, OutputError, "cannot create ", path, ": ", sysError());
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? sysError() : "short write";
      ::close(fd);
      FIXRES_FAIL(OutputError, "cannot write ", path, ": ", why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  FIXRES_CHECK(::close(fd) == 0, OutputError, "cannot write ", path, ": ", sysError());
}

void appendWhole(int fd, const std::string& path, const std::string& bytes,
                 const std::string& what) {
  const off_t end = ::lseek(fd, 0, SEEK_END);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? sysError() : "nothing written";
      const bool cut = done == 0 || (end >= 0 && ::ftruncate(fd, end) == 0);
      FIXRES_FAIL(OutputError, "cannot write ", path, ": ", why,
                  cut ? "" : " (and the partial " + what + " could not be removed)");
    }
    done += static_cast<size_t>(n);
  }
}

namespace {
// What a non-regular file is, for messages.
const char* fileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a folder";
  return "not a plain file";
}
}  // namespace

int openRegularFile(const std::string& path, uint64_t maxBytes, const std::string& what,
                    uint64_t* size, std::string* why) {
  const std::string prefix = "cannot read " + (what.empty() ? "" : what + " ") + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    *why = prefix + sysError();
    return -1;
  }
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = sysError();
  } else if (!S_ISREG(st.st_mode)) {
    problem = std::string(fileKind(st.st_mode)) + ", not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    problem = std::to_string(st.st_size) + " bytes, more than the " + std::to_string(maxBytes) +
              " a" + (what.empty() ? " file read whole" : " " + what) + " may have";
  } else {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) problem = sysError();
  }
  if (!problem.empty()) {
    ::close(fd);
    *why = prefix + problem;
    return -1;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

bool tryReadRegularFile(const std::string& path, uint64_t maxBytes, const std::string& what,
                        std::string* bytes, std::string* why) {
  uint64_t size = 0;
  const int fd = openRegularFile(path, maxBytes, what, &size, why);
  if (fd < 0) return false;
  const std::string prefix = "cannot read " + (what.empty() ? "" : what + " ") + path + ": ";
  try {
    bytes->assign(static_cast<size_t>(size), '\0');
  } catch (const std::bad_alloc&) {
    ::close(fd);
    *why = prefix + "its " + std::to_string(size) + " bytes do not fit in memory";
    return false;
  }
  size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t n = ::read(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = prefix + sysError();
      ::close(fd);
      return false;
    }
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes->resize(done);
  return true;
}

std::vector<char> readFile(const std::string& path) {
  const std::string bytes = readRegularFile<DataError>(path, kReadFileMaxBytes, "");
  return std::vector<char>(bytes.begin(), bytes.end());
}

void makeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  FIXRES_CHECK(!ec, OutputError, "cannot create folder ", path, ": ", ec.message());
}

void checkOutputFolder(const std::string& path, const std::string& what) {
  auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  struct stat st {};
  FIXRES_CHECK(::stat(dir.c_str(), &st) == 0, OutputError, "cannot write ", what, " ", path,
               ": folder ", dir, ": ", sysError());
  FIXRES_CHECK(S_ISDIR(st.st_mode), OutputError, "cannot write ", what, " ", path, ": ", dir,
               " is not a folder");
  FIXRES_CHECK(::access(dir.c_str(), W_OK) == 0, OutputError, "cannot write ", what, " ", path,
               ": folder ", dir, ": ", sysError());
}

std::vector<std::string> folderEntries(const std::string& dir, std::string* why) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec) *why = ec.message();
  std::sort(names.begin(), names.end());
  return names;
}

std::string entriesText(const std::vector<std::string>& names, size_t shown) {
  std::string list;
  for (size_t k = 0; k < names.size() && k < shown; ++k) list += (k ? ", " : "") + names[k];
  if (names.size() > shown) list += ", ... (" + std::to_string(names.size()) + " entries)";
  return list;
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace fixres
