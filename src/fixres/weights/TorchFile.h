// torch.save files (zip archives: data.pkl + one record per storage), read and written without
// Python. Our own pickle reader (Unpickler.h): LibTorch's unpickler turns
// collections.OrderedDict into None, so it cannot read the state dicts Python writes. The parts:
// ZipArchive.h (container), Unpickler.h / Pickler.h (data.pkl), StorageTypes.h (dtypes),
// StorageTensors.h (tensors over the records). The other formats read: LegacyTorchFile.h
// (pre-1.6 torch.save), SafetensorsFile.h; WeightSource.h opens any of them.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fixres/weights/WeightSource.h"

namespace fixres::models {

// A torch.save archive opened for reading. Throws WeightsError (path in the message) when the
// file is missing, empty, truncated, not a zip, or has no data.pkl.
class TorchArchive final : public WeightSource {
 public:
  explicit TorchArchive(const std::string& path);
  // An archive in memory: the `size` bytes at `data` are not copied and must outlive the
  // archive (eager tensors read from it own their data); `name` stands for the path in messages.
  TorchArchive(const void* data, size_t size, const std::string& name);
  ~TorchArchive() override;
  TorchArchive(const TorchArchive&) = delete;
  TorchArchive& operator=(const TorchArchive&) = delete;

  const std::string& path() const override { return path_; }

  // Unpickles data.pkl into IValues: dict (OrderedDict too) -> GenericDict with insertion order
  // (key type str when all keys are str, value type Tensor when all values are tensors), list
  // and set -> GenericList, tuple -> Tuple, numpy scalars -> int/double, torch globals (dtypes)
  // -> their dotted name as a string; other Python objects -> None (named in ignoredObjects()).
  // Eager (lazy = false): tensors are CPU tensors holding the file's data (peak memory about the
  // file size). Lazy: tensors are meta tensors (shape, strides, dtype only); their data is
  // copied on demand by copyInto(), so a state dict loads one record at a time.
  c10::IValue read(bool lazy) override;

  // Copies the data of lazy tensor `src` (from read(true) of this archive) into `dst` (same
  // shape; any device; dtype converted by copy_). Reads only the record holding `src`'s storage.
  void copyInto(const at::Tensor& src, at::Tensor& dst) override;

  // Python type names of objects read() could not represent (mapped to None).
  const std::vector<std::string>& ignoredObjects() const { return ignored_; }

  struct Impl;

 private:
  void checkContents();

  std::string path_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> ignored_;
};

// Reads a whole weight file eagerly: a torch.save file (zip or legacy) or a safetensors file
// (openWeightSource). WeightsError on anything wrong.
c10::IValue readTorchFile(const std::string& path);

// Writes `value` (None, bool, int, double, str, tensors on any device, and lists, tuples and
// str/int-keyed dicts of them) as a torch.save zip archive that Python's torch.load reads, also
// with weights_only=True: dicts become plain dicts, tensors plain (requires_grad = False)
// tensors; tensors sharing a storage stay shared. Streams one storage at a time (peak extra
// memory: one tensor, for GPU tensors). Atomic (AtomicFile.h): written to a temporary file in
// the same directory (O_EXCL|O_NOFOLLOW, mode 0666 & ~umask), fsynced, renamed over `path`,
// directory fsynced. On failure (e.g. disk full) `path` is untouched, the temporary removed and
// an OutputError (exit code 6) names the cause; a value with no torch.save form is a
// WeightsError, before any file is made.
void writeTorchFile(const std::string& path, const c10::IValue& value);

}  // namespace fixres::models
