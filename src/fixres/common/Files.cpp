// Atomic and plain whole-file writes, whole appends, whole-file reads, folders.
#include "fixres/common/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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

std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FIXRES_CHECK(in.good(), DataError, "cannot open ", path, ": ", sysError());
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  FIXRES_CHECK(size >= 0, DataError, "cannot read ", path);
  in.seekg(0);
  std::vector<char> data(static_cast<size_t>(size));
  in.read(data.data(), size);
  FIXRES_CHECK(in.gcount() == size, DataError, "cannot read ", path, ": short read");
  return data;
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

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace fixres
