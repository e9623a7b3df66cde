// Atomic file writes and whole-file reads.
#include "fixres/common/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "fixres/common/Error.h"

namespace fixres {
namespace {
std::string sysError() {
  return std::strerror(errno);
}

std::string parentOf(const std::string& path) {
  auto p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}
}  // namespace

void writeFileAtomic(const std::string& path, const std::string& bytes) {
  std::random_device rd;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  // O_EXCL|O_NOFOLLOW: never write through a symlink planted at the temp path.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  FIXRES_CHECK(fd >= 0, DataError, "cannot create ", tmp, ": ", sysError());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? sysError() : "short write";
      ::close(fd);
      ::unlink(tmp.c_str());
      FIXRES_FAIL(DataError, "cannot write ", path, ": ", why, " (previous file kept)");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = sysError();
    ::unlink(tmp.c_str());
    FIXRES_FAIL(DataError, "cannot write ", path, ": ", why, " (previous file kept)");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = sysError();
    ::unlink(tmp.c_str());
    FIXRES_FAIL(DataError, "cannot rename ", tmp, " to ", path, ": ", why);
  }
  int dfd = ::open(parentOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  FIXRES_CHECK(out.good(), DataError, "cannot write ", path, ": ", sysError());
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
  FIXRES_CHECK(!ec, DataError, "cannot create folder ", path, ": ", ec.message());
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace fixres
