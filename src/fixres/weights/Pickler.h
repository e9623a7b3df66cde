// A pickle writer for torch.save files: what Python's torch.save (protocol 2) emits for plain
// values and tensors, with the tensor storages collected for the container to write.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace fixres::models {

class Pickler {
 public:
  // A storage to write as record data/<key>.
  struct StorageRecord {
    std::string key;  // "0", "1", ... in order of first use
    at::Tensor flat;  // the whole storage as a 1-d tensor of its tensors' dtype (any device)
  };

  // Pickles `value` as one whole pickle (PROTO 2 ... STOP). Supported: None, bool, int, double,
  // str, devices (as str), tensors (strided, not quantized, not meta; dtypes of StorageTypes.h)
  // and tuples, lists and str/int-keyed dicts of them, nested up to 200 levels. Tensors become
  // _rebuild_tensor_v2 calls with requires_grad = False over persistent ids ('storage',
  // torch.XStorage, key, 'cpu', numel); tensors sharing a storage share the record. Call once.
  // WeightsError naming the value's type for anything else.
  void dump(const c10::IValue& value);

  // The pickle bytes (data.pkl).
  const std::string& bytes() const { return out_; }
  // The storages the pickle refers to, by key order. They keep their tensors' storages alive.
  const std::vector<StorageRecord>& storages() const { return storages_; }

 private:
  void value(const c10::IValue& v, int depth);
  void integer(int64_t i);
  void le(uint64_t v, int n);
  void string(const std::string& s);
  void global(const char* module, const std::string& name);
  void tensor(const at::Tensor& t);

  std::string out_;
  std::vector<StorageRecord> storages_;
  std::unordered_map<const c10::StorageImpl*, size_t> storageIndex_;
};

}  // namespace fixres::models
