// Pickling values and tensors the way torch.save does.
#include "fixres/weights/Pickler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "fixres/common/Error.h"
#include "fixres/weights/PickleOpcode.h"
#include "fixres/weights/StorageTypes.h"

namespace fixres::models {
namespace {

using Op = PickleOpcode;

// Python's pickler batches APPENDS/SETITEMS by 1000 items; so do we, for identical bytes.
constexpr size_t kBatch = 1000;

}  // namespace

void Pickler::dump(const c10::IValue& value) {
  out_ += pickleByte(Op::kProto);
  out_ += '\x02';
  this->value(value, 0);
  out_ += pickleByte(Op::kStop);
}

void Pickler::value(const c10::IValue& v, int depth) {
  FIXRES_CHECK(depth < 200, WeightsError, "value to save nests too deeply");
  if (v.isNone()) {
    out_ += pickleByte(Op::kNone);
  } else if (v.isBool()) {
    out_ += pickleByte(v.toBool() ? Op::kNewTrue : Op::kNewFalse);
  } else if (v.isInt()) {
    integer(v.toInt());
  } else if (v.isDouble()) {
    double d = v.toDouble();
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    out_ += pickleByte(Op::kBinFloat);
    for (int k = 7; k >= 0; --k) out_ += static_cast<char>((bits >> (8 * k)) & 0xff);
  } else if (v.isString()) {
    string(v.toStringRef());
  } else if (v.isTensor()) {
    tensor(v.toTensor());
  } else if (v.isTuple()) {
    const auto& elems = v.toTupleRef().elements();
    if (elems.empty()) {
      out_ += pickleByte(Op::kEmptyTuple);
    } else {
      out_ += pickleByte(Op::kMark);
      for (const auto& x : elems) value(x, depth + 1);
      out_ += pickleByte(Op::kTuple);
    }
  } else if (v.isList()) {
    out_ += pickleByte(Op::kEmptyList);
    auto items = v.toListRef();
    for (size_t start = 0; start < items.size(); start += kBatch) {
      out_ += pickleByte(Op::kMark);
      for (size_t k = start; k < std::min(items.size(), start + kBatch); ++k)
        value(items[k], depth + 1);
      out_ += pickleByte(Op::kAppends);
    }
  } else if (v.isGenericDict()) {
    out_ += pickleByte(Op::kEmptyDict);
    auto dict = v.toGenericDict();
    size_t n = 0;
    for (const auto& e : dict) {
      if (n % kBatch == 0) out_ += pickleByte(Op::kMark);
      value(e.key(), depth + 1);
      value(e.value(), depth + 1);
      if (++n % kBatch == 0) out_ += pickleByte(Op::kSetItems);
    }
    if (n % kBatch != 0) out_ += pickleByte(Op::kSetItems);
  } else if (v.isDevice()) {
    string(v.toDevice().str());
  } else {
    FIXRES_FAIL(WeightsError, "cannot save a value of type ", v.tagKind(), " in a torch.save file");
  }
}

void Pickler::integer(int64_t i) {
  if (i >= 0 && i < 256) {
    out_ += pickleByte(Op::kBinInt1);
    out_ += static_cast<char>(i);
  } else if (i >= 0 && i < 65536) {
    out_ += pickleByte(Op::kBinInt2);
    le(static_cast<uint64_t>(i), 2);
  } else if (i >= INT32_MIN && i <= INT32_MAX) {
    out_ += pickleByte(Op::kBinInt);
    le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(i))), 4);
  } else {
    out_ += pickleByte(Op::kLong1);
    out_ += '\x08';
    le(static_cast<uint64_t>(i), 8);
  }
}

void Pickler::le(uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out_ += static_cast<char>((v >> (8 * k)) & 0xff);
}

void Pickler::string(const std::string& s) {
  out_ += pickleByte(Op::kBinUnicode);
  le(s.size(), 4);
  out_ += s;
}

void Pickler::global(const char* module, const std::string& name) {
  out_ += pickleByte(Op::kGlobal);
  out_ += module;
  out_ += '\n';
  out_ += name;
  out_ += '\n';
}

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)
void Pickler::tensor(const at::Tensor& t) {
  FIXRES_CHECK(t.defined(), WeightsError, "cannot save an undefined tensor");
  FIXRES_CHECK(t.layout() == at::kStrided && !t.is_quantized() && !t.is_meta(), WeightsError,
               "cannot save a ", t.layout(), " / quantized / meta tensor");
  const c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
  auto it = storageIndex_.find(impl);
  if (it == storageIndex_.end()) {
    int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
    at::Tensor flat = at::empty({0}, t.options()).set_(t.storage(), 0, {numel}, {1});
    it = storageIndex_.emplace(impl, storages_.size()).first;
    storages_.push_back({std::to_string(storages_.size()), flat});
  }
  const StorageRecord& record = storages_[it->second];
  global("torch._utils", "_rebuild_tensor_v2");
  out_ += pickleByte(Op::kMark);
  // persistent id: ('storage', torch.XStorage, key, location, numel)
  out_ += pickleByte(Op::kMark);
  string("storage");
  global("torch", storageClassName(t.scalar_type()));
  string(record.key);
  string("cpu");
  integer(record.flat.numel());
  out_ += pickleByte(Op::kTuple);
  out_ += pickleByte(Op::kBinPersId);
  integer(t.storage_offset());
  out_ += pickleByte(Op::kMark);
  for (auto s : t.sizes()) integer(s);
  out_ += pickleByte(Op::kTuple);
  out_ += pickleByte(Op::kMark);
  for (auto s : t.strides()) integer(s);
  out_ += pickleByte(Op::kTuple);
  out_ += pickleByte(Op::kNewFalse);  // requires_grad
  global("collections", "OrderedDict");
  out_ += pickleByte(Op::kEmptyTuple);  // backward hooks: OrderedDict()
  out_ += pickleByte(Op::kReduce);
  out_ += pickleByte(Op::kTuple);
  out_ += pickleByte(Op::kReduce);
}

}  // namespace fixres::models
