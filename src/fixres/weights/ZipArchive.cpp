// torch.save zip archives: checks that name what is wrong with a file, then caffe2's reader and
// writer.
#include "fixres/weights/ZipArchive.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

// The end-of-central-directory record sits in the last 22 + 65535 bytes.
constexpr int64_t kTailBytes = 22 + 65535;

std::string errnoText() {
  return std::strerror(errno);
}

// Classifies the bytes before the zip reader sees them, for precise messages: `head` holds the
// first 4 bytes (zero-padded), `tail` the last kTailBytes (or all). Throws WeightsError unless
// both the zip header and the end-of-central-directory record are there.
void checkZip(const std::string& name, const unsigned char head[4], const std::string& tail) {
  bool zip = head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4;
  FIXRES_CHECK(zip, WeightsError, name,
               " is not a torch.save zip archive (it does not start with a zip header)");
  FIXRES_CHECK(tail.rfind(std::string("PK\x05\x06", 4)) != std::string::npos, WeightsError, name,
               " is a truncated zip archive (its central directory is missing): an interrupted "
               "copy or download?");
}

void checkZipFile(const std::string& path) {
  struct stat st {};
  FIXRES_CHECK(::stat(path.c_str(), &st) == 0, WeightsError, "cannot open weights file ", path,
               ": ", errnoText());
  FIXRES_CHECK(S_ISREG(st.st_mode), WeightsError, path, " is not a regular file");
  FIXRES_CHECK(st.st_size > 0, WeightsError, path, " is empty");
  std::ifstream in(path, std::ios::binary);
  FIXRES_CHECK(in.good(), WeightsError, "cannot open weights file ", path, ": ", errnoText());
  unsigned char head[4] = {0, 0, 0, 0};
  in.read(reinterpret_cast<char*>(head), 4);
  in.clear();
  int64_t tail = std::min<int64_t>(st.st_size, kTailBytes);
  std::string buf(static_cast<size_t>(tail), '\0');
  in.seekg(st.st_size - tail);
  in.read(buf.data(), tail);
  checkZip(path, head, buf);
}

void checkZipBytes(const void* data, size_t size, const std::string& name) {
  FIXRES_CHECK(size > 0, WeightsError, name, " is empty");
  const char* bytes = static_cast<const char*>(data);
  unsigned char head[4] = {0, 0, 0, 0};
  std::memcpy(head, bytes, std::min<size_t>(size, 4));
  size_t tail = std::min<size_t>(size, kTailBytes);
  checkZip(name, head, std::string(bytes + size - tail, tail));
}

// Bytes in memory for PyTorchStreamReader; reads past the end come back short (an error there).
class MemoryAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  MemoryAdapter(const void* data, size_t size)
      : data_(static_cast<const char*>(data)), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override {
    if (pos >= size_) return 0;
    n = std::min<size_t>(n, size_ - pos);
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  size_t size_;
};

}  // namespace

ZipArchive::ZipArchive(const std::string& path) : name_(path) {
  checkZipFile(path);
  try {
    reader_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, path, " is a zip archive but not a torch.save archive (",
                oneLine(e.what()), ")");
  }
}

ZipArchive::ZipArchive(const void* data, size_t size, const std::string& name) : name_(name) {
  checkZipBytes(data, size, name);
  try {
    reader_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(
        std::make_shared<MemoryAdapter>(data, size));
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, name, " is a zip archive but not a torch.save archive (",
                oneLine(e.what()), ")");
  }
}

ZipArchive::~ZipArchive() = default;

bool ZipArchive::hasRecord(const std::string& record) const {
  return reader_->hasRecord(record);
}

std::pair<at::DataPtr, size_t> ZipArchive::record(const std::string& record,
                                                  const std::string& what) const {
  try {
    auto [ptr, size] = reader_->getRecord(record);
    return {std::move(ptr), size};
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, name_, ": cannot read ", what, ": ", oneLine(e.what()));
  }
}

// ---------------------------------------------------------------------------------------------

ZipArchiveWriter::ZipArchiveWriter(Sink sink) {
  try {
    writer_ = std::make_unique<caffe2::serialize::PyTorchStreamWriter>(std::move(sink));
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, oneLine(e.what()));
  }
}

ZipArchiveWriter::~ZipArchiveWriter() = default;

void ZipArchiveWriter::writeRecord(const std::string& name, const void* data, size_t size) {
  try {
    writer_->writeRecord(name, data, size);
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, oneLine(e.what()));
  }
}

void ZipArchiveWriter::finish() {
  try {
    writer_->writeEndOfFile();
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, oneLine(e.what()));
  }
}

}  // namespace fixres::models
