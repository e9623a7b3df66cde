// The bytes of a file read at offsets, from an open file (pread) or from memory, so that its
// reader reads only what it needs and never maps or slurps the whole file: the weight readers
// without a zip container (LegacyTorchFile, SafetensorsFile) and the tar shards (data/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres {

class ByteSource {
 public:
  // Opens the weight file at `path` for reading. WeightsError naming it when it is missing or
  // unreadable ("cannot open weights file P: <reason>"), not a regular file, or empty.
  explicit ByteSource(const std::string& path);
  // The `size` bytes at `data` (not copied: they must outlive the source); `name` stands for the
  // path in messages. WeightsError when size is 0.
  ByteSource(const void* data, size_t size, std::string name);
  // The file open at `fd`, of `size` bytes: the source owns the descriptor and closes it. `name`
  // stands for the file in messages.
  ByteSource(int fd, uint64_t size, std::string name);
  ~ByteSource();
  ByteSource(ByteSource&& other) noexcept;
  ByteSource& operator=(ByteSource&&) = delete;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // The path or name given at opening.
  const std::string& name() const { return name_; }
  // Bytes in the file (as at opening).
  uint64_t size() const { return size_; }

  // Copies the `n` bytes at `offset` to `dst`. WeightsError "<name> is truncated (<what>: ...)"
  // when they run past the end (also when the file shrank since opening), or naming the system
  // error when reading fails.
  void read(uint64_t offset, void* dst, size_t n, const std::string& what) const;
  // The bytes at [offset, offset + n) cut at the end of the file (fewer, or none, past it).
  std::string readUpTo(uint64_t offset, size_t n) const;
  // Copies the `n` bytes at `offset` to `dst`, throwing nothing: false when they run past size(),
  // when the file ends first (it shrank since opening) or when reading fails (then errno says
  // why).
  bool readExact(uint64_t offset, void* dst, size_t n) const;

 private:
  size_t readSome(uint64_t offset, void* dst, size_t n) const;
  // pread until `n` bytes are read, the file ends or reading fails: the bytes read, and *failed
  // set when a read error stopped it (errno says which).
  size_t preadSome(uint64_t offset, void* dst, size_t n, bool* failed) const;

  std::string name_;
  uint64_t size_ = 0;
  int fd_ = -1;                   // file, or
  const char* memory_ = nullptr;  // bytes in memory
};

}  // namespace fixres
