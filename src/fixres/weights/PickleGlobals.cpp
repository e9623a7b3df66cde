// Data-only interpretation of the globals, calls and persistent ids of torch.save pickles.
#include "fixres/weights/PickleGlobals.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fixres/common/Error.h"
#include "fixres/weights/StorageTypes.h"

namespace fixres::models {
namespace {

using Kind = PickleObject::Kind;

int64_t asInt(const PickleObjectPtr& o, const char* what) {
  FIXRES_CHECK(o->kind == Kind::kInt || o->kind == Kind::kBool, WeightsError, what,
               ": expected int, got ", kindName(o->kind));
  return o->i;
}

std::vector<int64_t> asInts(const PickleObjectPtr& o, const char* what) {
  FIXRES_CHECK(o->kind == Kind::kTuple || o->kind == Kind::kList, WeightsError, what,
               ": expected a tuple, got ", kindName(o->kind));
  std::vector<int64_t> v;
  for (const auto& x : o->items) v.push_back(asInt(x, what));
  return v;
}

const PickleObjectPtr& arg(const PickleObjectPtr& args, size_t k, const std::string& fn) {
  FIXRES_CHECK(args->kind == Kind::kTuple && args->items.size() > k, WeightsError,
               "malformed call to ", fn);
  return args->items[k];
}

// Checks that a view (offset, sizes, strides) fits in a storage of `storageNumel` elements.
void checkView(int64_t storageNumel, int64_t offset, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& strides) {
  FIXRES_CHECK(sizes.size() == strides.size(), WeightsError, "tensor with ", sizes.size(),
               " sizes but ", strides.size(), " strides");
  FIXRES_CHECK(offset >= 0, WeightsError, "negative tensor storage offset ", offset);
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    FIXRES_CHECK(sizes[d] >= 0 && strides[d] >= 0, WeightsError, "invalid tensor size/stride");
    if (sizes[d] == 0) return;
    last += (sizes[d] - 1) * strides[d];
  }
  FIXRES_CHECK(last < storageNumel, WeightsError, "tensor view (offset ", offset, ", sizes ",
               c10::IntArrayRef(sizes), ", strides ", c10::IntArrayRef(strides),
               ") exceeds its storage of ", storageNumel, " elements");
}

}  // namespace

PickleObjectPtr PickleGlobals::opaque(const std::string& name) {
  if (std::find(ignored_.begin(), ignored_.end(), name) == ignored_.end()) ignored_.push_back(name);
  return arena_.makeStr(Kind::kOpaque, name);
}

PickleObjectPtr PickleGlobals::opaqueOfClass(const PickleObjectPtr& cls) {
  return opaque(cls->kind == Kind::kGlobal ? cls->s : "<object>");
}

PickleObjectPtr PickleGlobals::newObject(const PickleObjectPtr& cls) {
  if (cls->kind == Kind::kGlobal && cls->s == "builtins.set") return arena_.make(Kind::kList);
  if (cls->kind == Kind::kGlobal &&
      (cls->s == "collections.OrderedDict" || cls->s == "collections.defaultdict"))
    return arena_.make(Kind::kDict);
  return opaqueOfClass(cls);
}

PickleObjectPtr PickleGlobals::call(const PickleObjectPtr& callable, const PickleObjectPtr& args) {
  if (callable->kind != Kind::kGlobal)
    return opaque(std::string("<call of ") + kindName(callable->kind) + ">");
  const std::string& fn = callable->s;
  if (fn == "collections.OrderedDict" || fn == "builtins.dict" || fn == "__builtin__.dict") {
    auto out = arena_.make(Kind::kDict);
    if (args->kind == Kind::kTuple && !args->items.empty() &&
        (args->items[0]->kind == Kind::kList || args->items[0]->kind == Kind::kTuple)) {
      for (const auto& kv : args->items[0]->items) {
        FIXRES_CHECK(kv->kind == Kind::kTuple && kv->items.size() == 2, WeightsError,
                     "malformed OrderedDict items");
        arena_.addEntry(out, kv->items[0], kv->items[1]);
      }
    }
    return out;
  }
  if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor")
    return rebuildTensor(args, fn);
  if (fn == "torch._utils._rebuild_parameter" ||
      fn == "torch._utils._rebuild_parameter_with_state" ||
      fn == "torch.jit._pickle.restore_type_tag" || fn == "torch.jit._pickle.build_intlist" ||
      fn == "torch.jit._pickle.build_doublelist" || fn == "torch.jit._pickle.build_boollist" ||
      fn == "torch.jit._pickle.build_tensorlist" || fn == "torch.Size")
    return arg(args, 0, fn);
  if (fn == "torch._tensor._rebuild_from_type_v2") {
    FIXRES_CHECK(++callDepth_ < 100, WeightsError, source_, " nests calls too deeply");
    auto out = call(arg(args, 0, fn), arg(args, 2, fn));
    --callDepth_;
    return out;
  }
  if (fn == "builtins.set" || fn == "builtins.frozenset" || fn == "__builtin__.set" ||
      fn == "__builtin__.frozenset") {  // protocols < 3 name builtins the Python 2 way
    auto out = arena_.make(Kind::kList);
    if (args->kind == Kind::kTuple && !args->items.empty())
      for (const auto& x : args->items[0]->items) arena_.add(out, x);
    return out;
  }
  if (fn == "torch.device") {
    std::string dev = arg(args, 0, fn)->s;
    if (args->items.size() > 1 && args->items[1]->kind == Kind::kInt)
      dev += ":" + std::to_string(args->items[1]->i);
    return arena_.makeStr(Kind::kStr, dev);
  }
  if (fn == "numpy.dtype") return arena_.makeStr(Kind::kNumpyDtype, arg(args, 0, fn)->s);
  if (fn == "numpy.core.multiarray.scalar" || fn == "numpy._core.multiarray.scalar")
    return numpyScalar(arg(args, 0, fn), args->items.size() > 1 ? args->items[1] : nullptr);
  if (fn == "_codecs.encode") {
    // Protocol 2 writes bytes as _codecs.encode(text, "latin1"), text stored as UTF-8.
    return arena_.makeStr(Kind::kBytes, latin1FromUtf8(arg(args, 0, fn)->s));
  }
  if (fn == "builtins.bytes" || fn == "__builtin__.bytes") return arena_.make(Kind::kBytes);
  if (fn == "copyreg._reconstructor") return opaqueOfClass(arg(args, 0, fn));
  return opaque(fn);
}

PickleObjectPtr PickleGlobals::rebuildTensor(const PickleObjectPtr& args, const std::string& fn) {
  const PickleObjectPtr& storage = arg(args, 0, fn);
  FIXRES_CHECK(storage->kind == Kind::kStorage, WeightsError, fn,
               ": first argument is not a storage");
  int64_t offset = asInt(arg(args, 1, fn), "storage offset");
  std::vector<int64_t> sizes = asInts(arg(args, 2, fn), "tensor size");
  std::vector<int64_t> strides = asInts(arg(args, 3, fn), "tensor stride");
  checkView(storage->viewNumel, offset, sizes, strides);
  FIXRES_CHECK(offset <= std::numeric_limits<int64_t>::max() - storage->viewOffset, WeightsError,
               "tensor storage offset ", offset, " out of range");
  auto out = arena_.make(Kind::kTensor);
  out->tensor = storages_.tensor(storage->storage, storage->viewOffset + offset, sizes, strides);
  return out;
}

std::string PickleGlobals::latin1FromUtf8(const std::string& utf8) const {
  std::string out;
  for (size_t k = 0; k < utf8.size(); ++k) {
    auto c = static_cast<uint8_t>(utf8[k]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      FIXRES_CHECK((c & 0xfe) == 0xc2 && k + 1 < utf8.size(), WeightsError,
                   "malformed latin-1 bytes in ", source_);
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++k]) & 0x3f));
    }
  }
  return out;
}

PickleObjectPtr PickleGlobals::numpyScalar(const PickleObjectPtr& dtype,
                                           const PickleObjectPtr& data) {
  if (dtype->kind != Kind::kNumpyDtype || !data ||
      (data->kind != Kind::kBytes && data->kind != Kind::kStr))
    return opaque("numpy scalar");
  const std::string& t = dtype->s;
  const std::string& d = data->s;
  auto raw = [&](auto v) {
    FIXRES_CHECK(d.size() == sizeof(v), WeightsError, "numpy scalar of dtype ", t, " has ",
                 d.size(), " bytes");
    std::memcpy(&v, d.data(), sizeof(v));
    return v;
  };
  if (t == "f8") return arena_.makeFloat(raw(double{}));
  if (t == "f4") return arena_.makeFloat(raw(float{}));
  if (t == "i8" || t == "u8") return arena_.makeInt(raw(int64_t{}));
  if (t == "i4") return arena_.makeInt(raw(int32_t{}));
  if (t == "u4") return arena_.makeInt(raw(uint32_t{}));
  if (t == "b1") return arena_.makeBool(raw(uint8_t{}) != 0);
  return opaque("numpy scalar of dtype " + t);
}

PickleObjectPtr PickleGlobals::persistentLoad(const PickleObjectPtr& pid) {
  FIXRES_CHECK(pid->kind == Kind::kTuple && pid->items.size() >= 5 &&
                   pid->items[0]->kind == Kind::kStr && pid->items[0]->s == "storage",
               WeightsError, "unsupported persistent id in ", source_, " (not a tensor storage)");
  const PickleObjectPtr& type = pid->items[1];
  const PickleObjectPtr& key = pid->items[2];
  const PickleObjectPtr& location = pid->items[3];
  FIXRES_CHECK(type->kind == Kind::kGlobal, WeightsError, "malformed storage type");
  FIXRES_CHECK(key->kind == Kind::kStr, WeightsError, "malformed storage key");
  auto s = arena_.make(Kind::kStorage);
  s->storage.dtype = storageDtype(type->s);
  s->storage.key = key->s;
  if (location->kind == Kind::kStr) s->storage.location = location->s;
  s->storage.numel = asInt(pid->items[4], "storage size");
  // UntypedStorage counts bytes; typed storages count elements.
  FIXRES_CHECK(s->storage.numel >= 0, WeightsError, "negative storage size");
  s->viewNumel = s->storage.numel;
  // Pre-1.6 files: (view key, offset, size) in elements of the root storage, or None.
  if (pid->items.size() > 5 && pid->items[5]->kind != Kind::kNone) {
    const PickleObjectPtr& view = pid->items[5];
    FIXRES_CHECK(view->kind == Kind::kTuple && view->items.size() == 3, WeightsError,
                 "malformed storage view in ", source_);
    s->viewOffset = asInt(view->items[1], "storage view offset");
    s->viewNumel = asInt(view->items[2], "storage view size");
    FIXRES_CHECK(
        s->viewOffset >= 0 && s->viewNumel >= 0 && s->viewOffset <= s->storage.numel - s->viewNumel,
        WeightsError, "storage view (offset ", s->viewOffset, ", size ", s->viewNumel,
        ") exceeds its storage of ", s->storage.numel, " elements in ", source_);
  }
  storages_.declare(s->storage);
  return s;
}

}  // namespace fixres::models
