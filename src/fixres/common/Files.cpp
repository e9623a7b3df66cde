// Atomic whole-file writes (through AtomicFile) and whole-file reads.
#include "fixres/common/Files.h"

#include <sys/stat.h>

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
  FIXRES_CHECK(file.failedStep() != AtomicFile::Step::kCreate, DataError, "cannot create ",
               file.tempPath().empty() ? path : file.tempPath(), ": ", file.error());
  file.write(bytes.data(), bytes.size());
  if (file.commit()) return;
  FIXRES_CHECK(file.failedStep() != AtomicFile::Step::kRename, DataError, "cannot rename ",
               file.tempPath(), " to ", path, ": ", file.error());
  FIXRES_FAIL(DataError, "cannot write ", path, ": ", file.error(), " (previous file kept)");
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
