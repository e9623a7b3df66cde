// The zip container of torch.save files (PyTorch >= 1.6), over caffe2's PyTorchStreamReader and
// PyTorchStreamWriter: records stored uncompressed under one top folder ("archive/data.pkl",
// "archive/data/0", ...), record data 64-byte aligned.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace caffe2::serialize {
class PyTorchStreamReader;
class PyTorchStreamWriter;
}  // namespace caffe2::serialize

namespace fixres::models {

// A torch.save zip archive opened for reading. Records are named without the top folder
// ("data.pkl", "data/0"). Reads of different records may come in any order.
class ZipArchive {
 public:
  // Opens the file at `path`. WeightsError naming it when it is missing or unreadable, not a
  // regular file, empty, not a zip, truncated (no
  // end-of-central-directory record) or a zip that PyTorchStreamReader refuses.
  explicit ZipArchive(const std::string& path);
  // Opens the `size` bytes at `data` (not copied: they must outlive the archive), checked as
  // above; `name` stands for the path in messages.
  ZipArchive(const void* data, size_t size, const std::string& name);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  // The path or name given at opening.
  const std::string& name() const { return name_; }
  bool hasRecord(const std::string& record) const;
  // A copy of the whole record in a new CPU buffer (owned by the returned DataPtr) and its size
  // in bytes. WeightsError "<name>: cannot read <what>: <reason>" when it is absent or damaged;
  // `what` describes the record for that message.
  std::pair<at::DataPtr, size_t> record(const std::string& record, const std::string& what) const;

 private:
  std::string name_;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader_;
};

// Writes a torch.save zip archive to a byte sink, record by record.
class ZipArchiveWriter {
 public:
  // Receives the archive's bytes in order; returns the count taken (all of them: the zip writer
  // treats less as an error). Must not throw: it is called from C code.
  using Sink = std::function<size_t(const void* data, size_t size)>;

  explicit ZipArchiveWriter(Sink sink);
  ~ZipArchiveWriter();
  ZipArchiveWriter(const ZipArchiveWriter&) = delete;
  ZipArchiveWriter& operator=(const ZipArchiveWriter&) = delete;

  // Appends record `name` ("data.pkl", "data/0") holding `size` bytes at `data` (CPU memory, read
  // during the call). WeightsError with the zip writer's message on failure.
  void writeRecord(const std::string& name, const void* data, size_t size);
  // Writes the central directory; the archive is complete after it. WeightsError on failure.
  void finish();

 private:
  std::unique_ptr<caffe2::serialize::PyTorchStreamWriter> writer_;
};

}  // namespace fixres::models
