// torch.save archives: a pickle reader producing IValues (eager or lazy tensors) and a pickle
// writer producing what Python's torch.save writes, both over caffe2's zip container.
#include "fixres/models/TorchFile.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"

namespace fixres::models {
namespace {

// ---------------------------------------------------------------------------------------------
// Python objects as the unpickler sees them (only what torch.save files contain).
enum class Kind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kStr,
  kBytes,
  kTuple,
  kList,
  kDict,
  kGlobal,   // a module attribute: s = "module.name"
  kStorage,  // persistent id of a tensor storage
  kTensor,
  kNumpyDtype,  // s = numpy dtype string ("f8", "i8", ...)
  kOpaque,      // an object of an unsupported class: s = class name
};

struct PyObj;
using Obj = std::shared_ptr<PyObj>;

struct PyObj {
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<Obj> items;                    // tuple, list, set
  std::vector<std::pair<Obj, Obj>> entries;  // dict, in insertion order
  at::Tensor tensor;
  at::ScalarType dtype = at::kFloat;  // storage
  int64_t numel = 0;                  // storage
};

Obj make(Kind k) {
  auto o = std::make_shared<PyObj>();
  o->kind = k;
  return o;
}
Obj makeInt(int64_t v) {
  auto o = make(Kind::kInt);
  o->i = v;
  return o;
}
Obj makeStr(Kind k, std::string s) {
  auto o = make(k);
  o->s = std::move(s);
  return o;
}

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kTuple:
      return "tuple";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kGlobal:
      return "global";
    case Kind::kStorage:
      return "storage";
    case Kind::kTensor:
      return "tensor";
    case Kind::kNumpyDtype:
      return "numpy dtype";
    case Kind::kOpaque:
      return "object";
  }
  return "?";
}

at::ScalarType storageDtype(const std::string& global) {
  static const std::unordered_map<std::string, at::ScalarType> kTypes = {
      {"FloatStorage", at::kFloat},
      {"DoubleStorage", at::kDouble},
      {"HalfStorage", at::kHalf},
      {"BFloat16Storage", at::kBFloat16},
      {"LongStorage", at::kLong},
      {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort},
      {"CharStorage", at::kChar},
      {"ByteStorage", at::kByte},
      {"BoolStorage", at::kBool},
      {"ComplexFloatStorage", at::kComplexFloat},
      {"ComplexDoubleStorage", at::kComplexDouble},
      {"UntypedStorage", at::kByte},
  };
  auto dot = global.rfind('.');
  std::string name = dot == std::string::npos ? global : global.substr(dot + 1);
  auto it = kTypes.find(name);
  FIXRES_CHECK(it != kTypes.end(), WeightsError, "unsupported tensor storage type ", global);
  return it->second;
}

std::string storageGlobalName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "FloatStorage";
    case at::kDouble:
      return "DoubleStorage";
    case at::kHalf:
      return "HalfStorage";
    case at::kBFloat16:
      return "BFloat16Storage";
    case at::kLong:
      return "LongStorage";
    case at::kInt:
      return "IntStorage";
    case at::kShort:
      return "ShortStorage";
    case at::kChar:
      return "CharStorage";
    case at::kByte:
      return "ByteStorage";
    case at::kBool:
      return "BoolStorage";
    case at::kComplexFloat:
      return "ComplexFloatStorage";
    case at::kComplexDouble:
      return "ComplexDoubleStorage";
    default:
      FIXRES_FAIL(WeightsError, "cannot save tensors of dtype ", t);
  }
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

// Builds a tensor from (storage persistent id, offset, sizes, strides).
using TensorFactory = std::function<at::Tensor(const PyObj& storage, int64_t offset,
                                               const std::vector<int64_t>& sizes,
                                               const std::vector<int64_t>& strides)>;

// ---------------------------------------------------------------------------------------------
// A pickle (protocols 2-5, no out-of-band buffers) interpreter restricted to data: it never
// imports or calls anything; known torch/numpy/collections globals are interpreted, others
// become opaque objects.
class Unpickler {
 public:
  Unpickler(const char* data, size_t size, TensorFactory factory)
      : data_(data), size_(size), factory_(std::move(factory)) {}

  Obj run() {
    for (;;) {
      uint8_t op = u8();
      if (op == '.') break;
      step(op);
    }
    FIXRES_CHECK(stack_.size() == 1, WeightsError, "malformed pickle: ", stack_.size(),
                 " values left at STOP");
    return stack_.back();
  }

  const std::vector<std::string>& opaqueNames() const { return opaque_; }

 private:
  void need(size_t n) {
    FIXRES_CHECK(pos_ + n <= size_ && pos_ + n >= pos_, WeightsError,
                 "data.pkl is truncated (needed ", n, " bytes at offset ", pos_, ")");
  }
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(data_[pos_++]);
  }
  uint64_t uintLE(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t(static_cast<uint8_t>(data_[pos_ + k])) << (8 * k);
    pos_ += n;
    return v;
  }
  std::string bytes(uint64_t n) {
    FIXRES_CHECK(n <= size_, WeightsError, "data.pkl is corrupt (string of ", n, " bytes)");
    need(n);
    std::string s(data_ + pos_, n);
    pos_ += n;
    return s;
  }
  std::string line() {
    size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != '\n') ++pos_;
    need(1);
    std::string s(data_ + start, pos_ - start);
    ++pos_;
    return s;
  }
  Obj pop() {
    FIXRES_CHECK(!stack_.empty(), WeightsError, "malformed pickle: stack underflow");
    Obj o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Obj& top() {
    FIXRES_CHECK(!stack_.empty(), WeightsError, "malformed pickle: empty stack");
    return stack_.back();
  }
  std::vector<Obj> popMark() {
    FIXRES_CHECK(!marks_.empty(), WeightsError, "malformed pickle: no MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    FIXRES_CHECK(m <= stack_.size(), WeightsError, "malformed pickle: bad MARK");
    std::vector<Obj> items(stack_.begin() + m, stack_.end());
    stack_.resize(m);
    return items;
  }
  Obj memoGet(uint64_t k) {
    auto it = memo_.find(k);
    FIXRES_CHECK(it != memo_.end(), WeightsError, "malformed pickle: memo key ", k, " unset");
    return it->second;
  }
  void memoPut(uint64_t k) { memo_[k] = top(); }

  Obj tuple(std::vector<Obj> items) {
    auto t = make(Kind::kTuple);
    t->items = std::move(items);
    return t;
  }

  void opaque(const std::string& name, Obj& out) {
    out = makeStr(Kind::kOpaque, name);
    if (std::find(opaque_.begin(), opaque_.end(), name) == opaque_.end()) opaque_.push_back(name);
  }

  static int64_t asInt(const Obj& o, const char* what) {
    FIXRES_CHECK(o->kind == Kind::kInt || o->kind == Kind::kBool, WeightsError, what,
                 ": expected int, got ", kindName(o->kind));
    return o->i;
  }
  static std::vector<int64_t> asInts(const Obj& o, const char* what) {
    FIXRES_CHECK(o->kind == Kind::kTuple || o->kind == Kind::kList, WeightsError, what,
                 ": expected a tuple, got ", kindName(o->kind));
    std::vector<int64_t> v;
    for (const auto& x : o->items) v.push_back(asInt(x, what));
    return v;
  }
  static const Obj& arg(const Obj& args, size_t k, const std::string& fn) {
    FIXRES_CHECK(args->kind == Kind::kTuple && args->items.size() > k, WeightsError,
                 "malformed call to ", fn);
    return args->items[k];
  }

  // Interprets callable(*args) for the globals torch.save files use.
  Obj call(const Obj& callable, const Obj& args) {
    Obj out;
    if (callable->kind != Kind::kGlobal) {
      opaque(std::string("<call of ") + kindName(callable->kind) + ">", out);
      return out;
    }
    const std::string& fn = callable->s;
    if (fn == "collections.OrderedDict" || fn == "builtins.dict" || fn == "__builtin__.dict") {
      out = make(Kind::kDict);
      if (args->kind == Kind::kTuple && !args->items.empty() &&
          (args->items[0]->kind == Kind::kList || args->items[0]->kind == Kind::kTuple)) {
        for (const auto& kv : args->items[0]->items) {
          FIXRES_CHECK(kv->kind == Kind::kTuple && kv->items.size() == 2, WeightsError,
                       "malformed OrderedDict items");
          out->entries.emplace_back(kv->items[0], kv->items[1]);
        }
      }
    } else if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
      const Obj& storage = arg(args, 0, fn);
      FIXRES_CHECK(storage->kind == Kind::kStorage, WeightsError, fn,
                   ": first argument is not a storage");
      out = make(Kind::kTensor);
      out->tensor = factory_(*storage, asInt(arg(args, 1, fn), "storage offset"),
                             asInts(arg(args, 2, fn), "tensor size"),
                             asInts(arg(args, 3, fn), "tensor stride"));
    } else if (fn == "torch._utils._rebuild_parameter" ||
               fn == "torch._utils._rebuild_parameter_with_state" ||
               fn == "torch.jit._pickle.restore_type_tag" ||
               fn == "torch.jit._pickle.build_intlist" ||
               fn == "torch.jit._pickle.build_doublelist" ||
               fn == "torch.jit._pickle.build_boollist" ||
               fn == "torch.jit._pickle.build_tensorlist" || fn == "torch.Size") {
      out = arg(args, 0, fn);
    } else if (fn == "torch._tensor._rebuild_from_type_v2") {
      FIXRES_CHECK(++callDepth_ < 100, WeightsError, "data.pkl nests calls too deeply");
      out = call(arg(args, 0, fn), arg(args, 2, fn));
      --callDepth_;
    } else if (fn == "builtins.set" || fn == "builtins.frozenset") {
      out = make(Kind::kList);
      if (args->kind == Kind::kTuple && !args->items.empty()) out->items = args->items[0]->items;
    } else if (fn == "torch.device") {
      std::string dev = arg(args, 0, fn)->s;
      if (args->items.size() > 1 && args->items[1]->kind == Kind::kInt)
        dev += ":" + std::to_string(args->items[1]->i);
      out = makeStr(Kind::kStr, dev);
    } else if (fn == "numpy.dtype") {
      out = makeStr(Kind::kNumpyDtype, arg(args, 0, fn)->s);
    } else if (fn == "numpy.core.multiarray.scalar" || fn == "numpy._core.multiarray.scalar") {
      out = numpyScalar(arg(args, 0, fn), args->items.size() > 1 ? args->items[1] : nullptr);
    } else if (fn == "_codecs.encode") {
      // Protocol 2 writes bytes as _codecs.encode(text, "latin1"), text stored as UTF-8.
      out = makeStr(Kind::kBytes, latin1FromUtf8(arg(args, 0, fn)->s));
    } else if (fn == "builtins.bytes" || fn == "__builtin__.bytes") {
      out = make(Kind::kBytes);
    } else if (fn == "copyreg._reconstructor") {
      const Obj& cls = arg(args, 0, fn);
      opaque(cls->kind == Kind::kGlobal ? cls->s : "<object>", out);
    } else {
      opaque(fn, out);
    }
    return out;
  }

  static std::string latin1FromUtf8(const std::string& utf8) {
    std::string out;
    for (size_t k = 0; k < utf8.size(); ++k) {
      auto c = static_cast<uint8_t>(utf8[k]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else {
        FIXRES_CHECK((c & 0xfe) == 0xc2 && k + 1 < utf8.size(), WeightsError,
                     "malformed latin-1 bytes in data.pkl");
        out += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++k]) & 0x3f));
      }
    }
    return out;
  }

  Obj numpyScalar(const Obj& dtype, const Obj& data) {
    Obj out;
    if (dtype->kind != Kind::kNumpyDtype || !data ||
        (data->kind != Kind::kBytes && data->kind != Kind::kStr)) {
      opaque("numpy scalar", out);
      return out;
    }
    const std::string& t = dtype->s;
    const std::string& d = data->s;
    auto raw = [&](auto v) {
      FIXRES_CHECK(d.size() == sizeof(v), WeightsError, "numpy scalar of dtype ", t, " has ",
                   d.size(), " bytes");
      std::memcpy(&v, d.data(), sizeof(v));
      return v;
    };
    if (t == "f8") {
      out = make(Kind::kFloat);
      out->f = raw(double{});
    } else if (t == "f4") {
      out = make(Kind::kFloat);
      out->f = raw(float{});
    } else if (t == "i8" || t == "u8") {
      out = makeInt(raw(int64_t{}));
    } else if (t == "i4") {
      out = makeInt(raw(int32_t{}));
    } else if (t == "u4") {
      out = makeInt(raw(uint32_t{}));
    } else if (t == "b1") {
      out = make(Kind::kBool);
      out->b = raw(uint8_t{}) != 0;
      out->i = out->b;
    } else {
      opaque("numpy scalar of dtype " + t, out);
    }
    return out;
  }

  Obj persistent(const Obj& pid) {
    FIXRES_CHECK(pid->kind == Kind::kTuple && pid->items.size() >= 5 &&
                     pid->items[0]->kind == Kind::kStr && pid->items[0]->s == "storage",
                 WeightsError, "unsupported persistent id in data.pkl (not a tensor storage)");
    const Obj& type = pid->items[1];
    const Obj& key = pid->items[2];
    FIXRES_CHECK(type->kind == Kind::kGlobal, WeightsError, "malformed storage type");
    FIXRES_CHECK(key->kind == Kind::kStr, WeightsError, "malformed storage key");
    auto s = make(Kind::kStorage);
    s->dtype = storageDtype(type->s);
    s->s = key->s;
    s->numel = asInt(pid->items[4], "storage size");
    // UntypedStorage counts bytes; typed storages count elements.
    FIXRES_CHECK(s->numel >= 0, WeightsError, "negative storage size");
    return s;
  }

  void setItems(const Obj& target, std::vector<Obj> kv) {
    FIXRES_CHECK(kv.size() % 2 == 0, WeightsError, "malformed pickle: odd SETITEMS");
    if (target->kind != Kind::kDict) return;  // state of an unsupported object: ignored
    for (size_t k = 0; k < kv.size(); k += 2) target->entries.emplace_back(kv[k], kv[k + 1]);
  }
  void appendItems(const Obj& target, std::vector<Obj> items) {
    if (target->kind != Kind::kList) return;
    for (auto& x : items) target->items.push_back(std::move(x));
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80:
        u8();
        break;  // PROTO
      case 0x95:
        uintLE(8);
        break;  // FRAME
      case 'N':
        stack_.push_back(make(Kind::kNone));
        break;
      case 0x88:
      case 0x89: {
        auto o = make(Kind::kBool);
        o->b = op == 0x88;
        o->i = o->b;
        stack_.push_back(o);
        break;
      }
      case 'J':
        stack_.push_back(makeInt(static_cast<int32_t>(uintLE(4))));
        break;
      case 'K':
        stack_.push_back(makeInt(uintLE(1)));
        break;
      case 'M':
        stack_.push_back(makeInt(uintLE(2)));
        break;
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4: little-endian two's complement
        uint64_t n = uintLE(op == 0x8a ? 1 : 4);
        FIXRES_CHECK(n <= 8, WeightsError, "integer of ", n, " bytes in data.pkl is too large");
        uint64_t v = n ? uintLE(n) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
        stack_.push_back(makeInt(static_cast<int64_t>(v)));
        break;
      }
      case 'I':
      case 'L': {
        std::string s = line();
        if (!s.empty() && s.back() == 'L') s.pop_back();
        if (op == 'I' && (s == "00" || s == "01")) {
          auto o = make(Kind::kBool);
          o->b = s == "01";
          o->i = o->b;
          stack_.push_back(o);
        } else {
          stack_.push_back(makeInt(std::stoll(s)));
        }
        break;
      }
      case 'G': {
        uint64_t bits = 0;
        need(8);
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(data_[pos_ + k]);
        pos_ += 8;
        auto o = make(Kind::kFloat);
        std::memcpy(&o->f, &bits, 8);
        stack_.push_back(o);
        break;
      }
      case 'F': {
        auto o = make(Kind::kFloat);
        o->f = std::stod(line());
        stack_.push_back(o);
        break;
      }
      case 'X':
        stack_.push_back(makeStr(Kind::kStr, bytes(uintLE(4))));
        break;
      case 0x8c:
        stack_.push_back(makeStr(Kind::kStr, bytes(uintLE(1))));
        break;
      case 0x8d:
        stack_.push_back(makeStr(Kind::kStr, bytes(uintLE(8))));
        break;
      case 'T':
        stack_.push_back(makeStr(Kind::kStr, bytes(uintLE(4))));
        break;
      case 'U':
        stack_.push_back(makeStr(Kind::kStr, bytes(uintLE(1))));
        break;
      case 'B':
        stack_.push_back(makeStr(Kind::kBytes, bytes(uintLE(4))));
        break;
      case 'C':
        stack_.push_back(makeStr(Kind::kBytes, bytes(uintLE(1))));
        break;
      case 0x8e:
        stack_.push_back(makeStr(Kind::kBytes, bytes(uintLE(8))));
        break;
      case ')':
        stack_.push_back(tuple({}));
        break;
      case 't':
        stack_.push_back(tuple(popMark()));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = op - 0x84;
        FIXRES_CHECK(stack_.size() >= n, WeightsError, "malformed pickle: short TUPLE");
        std::vector<Obj> items(stack_.end() - n, stack_.end());
        stack_.resize(stack_.size() - n);
        stack_.push_back(tuple(std::move(items)));
        break;
      }
      case ']':
      case 0x8f:
        stack_.push_back(make(Kind::kList));
        break;  // EMPTY_LIST, EMPTY_SET
      case 'l': {
        auto l = make(Kind::kList);
        l->items = popMark();
        stack_.push_back(l);
        break;
      }
      case 0x91: {  // FROZENSET
        auto l = make(Kind::kList);
        l->items = popMark();
        stack_.push_back(l);
        break;
      }
      case 'a': {
        Obj v = pop();
        appendItems(top(), {v});
        break;
      }
      case 'e':
      case 0x90: {  // APPENDS, ADDITEMS
        auto items = popMark();
        appendItems(top(), std::move(items));
        break;
      }
      case '}':
        stack_.push_back(make(Kind::kDict));
        break;
      case 'd': {
        auto d = make(Kind::kDict);
        setItems(d, popMark());
        stack_.push_back(d);
        break;
      }
      case 's': {
        Obj v = pop();
        Obj k = pop();
        setItems(top(), {k, v});
        break;
      }
      case 'u': {
        auto kv = popMark();
        setItems(top(), std::move(kv));
        break;
      }
      case '(':
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop();
        break;
      case '1':
        popMark();
        break;
      case '2': {
        Obj copy = top();
        stack_.push_back(std::move(copy));
        break;
      }
      case 'c': {
        std::string module = line();
        std::string name = line();
        stack_.push_back(makeStr(Kind::kGlobal, module + "." + name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Obj name = pop();
        Obj module = pop();
        stack_.push_back(makeStr(Kind::kGlobal, module->s + "." + name->s));
        break;
      }
      case 'R': {
        Obj args = pop();
        Obj fn = pop();
        stack_.push_back(call(fn, args));
        break;
      }
      case 0x81: {  // NEWOBJ cls args
        Obj args = pop();
        Obj cls = pop();
        if (cls->kind == Kind::kGlobal &&
            (cls->s == "collections.OrderedDict" || cls->s == "builtins.set" ||
             cls->s == "collections.defaultdict")) {
          stack_.push_back(cls->s == "builtins.set" ? make(Kind::kList) : make(Kind::kDict));
        } else {
          Obj out;
          opaque(cls->kind == Kind::kGlobal ? cls->s : "<object>", out);
          stack_.push_back(out);
        }
        break;
      }
      case 0x92: {  // NEWOBJ_EX cls args kwargs
        pop();
        pop();
        Obj cls = pop();
        Obj out;
        opaque(cls->kind == Kind::kGlobal ? cls->s : "<object>", out);
        stack_.push_back(out);
        break;
      }
      case 'b':
        pop();
        top();
        break;  // BUILD: object state (OrderedDict _metadata...) ignored
      case 'p':
        memoPut(std::stoull(line()));
        break;
      case 'q':
        memoPut(uintLE(1));
        break;
      case 'r':
        memoPut(uintLE(4));
        break;
      case 0x94:
        memo_[memo_.size()] = top();
        break;  // MEMOIZE
      case 'g':
        stack_.push_back(memoGet(std::stoull(line())));
        break;
      case 'h':
        stack_.push_back(memoGet(uintLE(1)));
        break;
      case 'j':
        stack_.push_back(memoGet(uintLE(4)));
        break;
      case 'Q':
        stack_.push_back(persistent(pop()));
        break;
      default:
        FIXRES_FAIL(WeightsError, "unsupported pickle opcode 0x", std::hex, int(op), " at offset ",
                    std::dec, pos_ - 1, " in data.pkl");
    }
  }

  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  TensorFactory factory_;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj> memo_;
  std::vector<std::string> opaque_;
  int callDepth_ = 0;
};

// Converts the unpickled objects to IValues (shared objects converted once).
class Converter {
 public:
  c10::IValue convert(const Obj& o, int depth = 0) {
    FIXRES_CHECK(depth < 200, WeightsError, "data.pkl nests too deeply");
    auto it = done_.find(o.get());
    if (it != done_.end()) return it->second;
    c10::IValue v = convertNew(o, depth);
    done_.emplace(o.get(), v);
    return v;
  }

 private:
  static c10::TypePtr commonType(const std::vector<c10::IValue>& vs) {
    if (vs.empty()) return c10::AnyType::get();
    auto same = [&](auto pred) { return std::all_of(vs.begin(), vs.end(), pred); };
    if (same([](const c10::IValue& v) { return v.isString(); })) return c10::StringType::get();
    if (same([](const c10::IValue& v) { return v.isTensor(); })) return c10::TensorType::get();
    if (same([](const c10::IValue& v) { return v.isInt(); })) return c10::IntType::get();
    if (same([](const c10::IValue& v) { return v.isDouble(); })) return c10::FloatType::get();
    return c10::AnyType::get();
  }

  c10::IValue convertNew(const Obj& o, int depth) {
    switch (o->kind) {
      case Kind::kNone:
      case Kind::kOpaque:
      case Kind::kNumpyDtype:
      case Kind::kStorage:
        return c10::IValue();
      case Kind::kBool:
        return c10::IValue(o->b);
      case Kind::kInt:
        return c10::IValue(o->i);
      case Kind::kFloat:
        return c10::IValue(o->f);
      case Kind::kStr:
      case Kind::kBytes:
      case Kind::kGlobal:
        return c10::IValue(o->s);
      case Kind::kTensor:
        return c10::IValue(o->tensor);
      case Kind::kTuple: {
        std::vector<c10::IValue> items;
        for (const auto& x : o->items) items.push_back(convert(x, depth + 1));
        return c10::ivalue::Tuple::create(std::move(items));
      }
      case Kind::kList: {
        std::vector<c10::IValue> items;
        for (const auto& x : o->items) items.push_back(convert(x, depth + 1));
        c10::impl::GenericList list(commonType(items));
        for (auto& x : items) list.push_back(std::move(x));
        return list;
      }
      case Kind::kDict: {
        std::vector<c10::IValue> keys, values;
        for (const auto& [k, v] : o->entries) {
          keys.push_back(convert(k, depth + 1));
          values.push_back(convert(v, depth + 1));
          const auto& key = keys.back();
          FIXRES_CHECK(
              key.isString() || key.isInt() || key.isDouble() || key.isBool() || key.isNone(),
              WeightsError, "unsupported dict key of type ", key.tagKind(), " in data.pkl");
        }
        c10::impl::GenericDict dict(commonType(keys), commonType(values));
        for (size_t k = 0; k < keys.size(); ++k) dict.insert_or_assign(keys[k], values[k]);
        return dict;
      }
    }
    return c10::IValue();
  }

  std::unordered_map<const PyObj*, c10::IValue> done_;
};

std::string errnoText() {
  return std::strerror(errno);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
struct TorchArchive::Impl {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  struct LazySource {
    std::string key;
    at::ScalarType dtype;
    int64_t storageNumel;
    int64_t offset;
  };
  std::unordered_map<const c10::TensorImpl*, LazySource> lazy;
  // The record read last (lazy loading reads each record once when tensors come in order).
  std::string cachedKey;
  std::shared_ptr<at::DataPtr> cachedData;
  size_t cachedSize = 0;

  std::pair<std::shared_ptr<at::DataPtr>, size_t> record(const std::string& path,
                                                         const std::string& key) {
    if (cachedData && key == cachedKey) return {cachedData, cachedSize};
    cachedData.reset();
    std::string name = "data/" + key;
    try {
      auto [ptr, size] = reader->getRecord(name);
      cachedData = std::make_shared<at::DataPtr>(std::move(ptr));
      cachedSize = size;
      cachedKey = key;
    } catch (const c10::Error& e) {
      FIXRES_FAIL(WeightsError, path, ": cannot read tensor record ", name,
                  " (file corrupt?): ", oneLine(e.what()));
    }
    return {cachedData, cachedSize};
  }
};

namespace {
// Classifies the file before the zip reader sees it, for precise messages. Returns true when
// the zip's end-of-central-directory record is present (else the file is truncated).
bool probeFile(const std::string& path) {
  struct stat st {};
  FIXRES_CHECK(::stat(path.c_str(), &st) == 0, WeightsError, "cannot open weights file ", path,
               ": ", errnoText());
  FIXRES_CHECK(S_ISREG(st.st_mode), WeightsError, path, " is not a regular file");
  FIXRES_CHECK(st.st_size > 0, WeightsError, path, " is empty");
  std::ifstream in(path, std::ios::binary);
  FIXRES_CHECK(in.good(), WeightsError, "cannot open weights file ", path, ": ", errnoText());
  unsigned char head[4] = {0, 0, 0, 0};
  in.read(reinterpret_cast<char*>(head), 4);
  bool zip = head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4;
  if (!zip) {
    FIXRES_CHECK(head[0] != 0x80, WeightsError, path,
                 " is a legacy (pre-1.6, non-zip) torch.save file; re-save it with PyTorch >= "
                 "1.6: torch.save(torch.load(p), p)");
    FIXRES_FAIL(WeightsError, path,
                " is not a torch.save zip archive (it does not start with a zip header)");
  }
  // The end-of-central-directory record sits in the last 22 + 65535 bytes.
  int64_t tail = std::min<int64_t>(st.st_size, 22 + 65535);
  std::string buf(static_cast<size_t>(tail), '\0');
  in.seekg(st.st_size - tail);
  in.read(buf.data(), tail);
  return buf.rfind(std::string("PK\x05\x06", 4)) != std::string::npos;
}
}  // namespace

TorchArchive::TorchArchive(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
  bool complete = probeFile(path);
  FIXRES_CHECK(complete, WeightsError, path,
               " is a truncated zip archive (its central directory is missing): an interrupted "
               "copy or download?");
  try {
    impl_->reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, path, " is a zip archive but not a torch.save archive (",
                oneLine(e.what()), ")");
  }
  FIXRES_CHECK(impl_->reader->hasRecord("data.pkl"), WeightsError, path,
               " is a zip archive without data.pkl: not a torch.save archive");
  if (impl_->reader->hasRecord("byteorder")) {
    auto [ptr, size] = impl_->reader->getRecord("byteorder");
    std::string order(static_cast<const char*>(ptr.get()), size);
    FIXRES_CHECK(order == "little", WeightsError, path, " was saved with byte order '", order,
                 "'; only little-endian files are supported");
  }
}

TorchArchive::~TorchArchive() = default;

c10::IValue TorchArchive::read(bool lazy) {
  at::DataPtr pickle;
  size_t pickleSize = 0;
  try {
    std::tie(pickle, pickleSize) = impl_->reader->getRecord("data.pkl");
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, path_, ": cannot read data.pkl: ", oneLine(e.what()));
  }
  std::unordered_map<std::string, at::Tensor> flat;  // eager: storage key -> 1-d tensor
  Impl& impl = *impl_;
  const std::string& path = path_;
  TensorFactory factory = [&](const PyObj& st, int64_t offset, const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides) -> at::Tensor {
    checkView(st.numel, offset, sizes, strides);
    auto opts = at::TensorOptions().dtype(st.dtype);
    if (lazy) {
      at::Tensor t = at::empty_strided(sizes, strides, opts.device(at::kMeta));
      impl.lazy[t.unsafeGetTensorImpl()] = Impl::LazySource{st.s, st.dtype, st.numel, offset};
      return t;
    }
    auto it = flat.find(st.s);
    if (it == flat.end()) {
      at::Tensor base;
      if (st.numel == 0) {
        base = at::empty({0}, opts);
      } else {
        auto record = impl.record(path, st.s);  // (not a structured binding: captured below)
        auto data = record.first;
        auto size = record.second;
        int64_t bytes = st.numel * static_cast<int64_t>(c10::elementSize(st.dtype));
        FIXRES_CHECK(static_cast<int64_t>(size) >= bytes, WeightsError, path, ": record data/",
                     st.s, " has ", size, " bytes, expected ", bytes);
        base = at::from_blob(
            data->get(), {st.numel}, [data](void*) {}, opts);
        impl.cachedData.reset();  // the tensor owns it now
      }
      it = flat.emplace(st.s, base).first;
    }
    return it->second.as_strided(sizes, strides, offset);
  };
  Unpickler unpickler(static_cast<const char*>(pickle.get()), pickleSize, factory);
  Obj root;
  try {
    root = unpickler.run();
  } catch (const WeightsError& e) {
    FIXRES_FAIL(WeightsError, path_, ": ", e.what());
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, path_, ": cannot decode data.pkl: ", oneLine(e.what()));
  } catch (const std::logic_error& e) {  // std::stoll on a malformed text opcode
    FIXRES_FAIL(WeightsError, path_, ": malformed data.pkl: ", e.what());
  }
  ignored_ = unpickler.opaqueNames();
  if (!ignored_.empty()) {
    std::string names;
    for (const auto& n : ignored_) names += (names.empty() ? "" : ", ") + n;
    log::debug(path_, ": ignored Python objects of types ", names);
  }
  Converter converter;
  try {
    return converter.convert(root);
  } catch (const WeightsError& e) {
    FIXRES_FAIL(WeightsError, path_, ": ", e.what());
  }
}

bool TorchArchive::isLazy(const at::Tensor& t) const {
  return t.defined() && impl_->lazy.count(t.unsafeGetTensorImpl()) > 0;
}

void TorchArchive::copyInto(const at::Tensor& src, at::Tensor& dst) {
  auto it = impl_->lazy.find(src.unsafeGetTensorImpl());
  FIXRES_CHECK(it != impl_->lazy.end(), InternalError, "copyInto: not a lazy tensor of ", path_);
  const auto& s = it->second;
  FIXRES_CHECK(src.sizes() == dst.sizes(), WeightsError, path_, ": shape ", src.sizes(),
               " does not match ", dst.sizes());
  if (src.numel() == 0) return;
  auto record = impl_->record(path_, s.key);  // (not a structured binding: captured below)
  auto data = record.first;
  auto size = record.second;
  int64_t bytes = s.storageNumel * static_cast<int64_t>(c10::elementSize(s.dtype));
  FIXRES_CHECK(static_cast<int64_t>(size) >= bytes, WeightsError, path_, ": record data/", s.key,
               " has ", size, " bytes, expected ", bytes);
  at::Tensor view =
      at::from_blob(
          data->get(), {s.storageNumel}, [data](void*) {}, at::TensorOptions().dtype(s.dtype))
          .as_strided(src.sizes(), src.strides(), s.offset);
  at::NoGradGuard noGrad;
  dst.copy_(view);
}

c10::IValue readTorchFile(const std::string& path) {
  TorchArchive archive(path);
  return archive.read(/*lazy=*/false);
}

// ---------------------------------------------------------------------------------------------
// Writing.
namespace {

// Emits the pickle stream Python's torch.save (protocol 2) emits for plain containers and
// tensors; storages are collected for the zip records.
class Pickler {
 public:
  struct StorageRecord {
    std::string key;
    at::Tensor flat;  // the whole storage as a 1-d tensor (any device)
  };

  std::string out;
  std::vector<StorageRecord> storages;

  void begin() { out += "\x80\x02"; }
  void end() { out += '.'; }

  void value(const c10::IValue& v, int depth = 0) {
    FIXRES_CHECK(depth < 200, WeightsError, "value to save nests too deeply");
    if (v.isNone()) {
      out += 'N';
    } else if (v.isBool()) {
      out += v.toBool() ? '\x88' : '\x89';
    } else if (v.isInt()) {
      integer(v.toInt());
    } else if (v.isDouble()) {
      double d = v.toDouble();
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      out += 'G';
      for (int k = 7; k >= 0; --k) out += static_cast<char>((bits >> (8 * k)) & 0xff);
    } else if (v.isString()) {
      string(v.toStringRef());
    } else if (v.isTensor()) {
      tensor(v.toTensor());
    } else if (v.isTuple()) {
      const auto& elems = v.toTupleRef().elements();
      if (elems.empty()) {
        out += ')';
      } else {
        out += '(';
        for (const auto& x : elems) value(x, depth + 1);
        out += 't';
      }
    } else if (v.isList()) {
      out += ']';
      auto items = v.toListRef();
      for (size_t start = 0; start < items.size(); start += 1000) {
        out += '(';
        for (size_t k = start; k < std::min(items.size(), start + 1000); ++k)
          value(items[k], depth + 1);
        out += 'e';
      }
    } else if (v.isGenericDict()) {
      out += '}';
      auto dict = v.toGenericDict();
      size_t n = 0;
      for (const auto& e : dict) {
        if (n % 1000 == 0) out += '(';
        value(e.key(), depth + 1);
        value(e.value(), depth + 1);
        if (++n % 1000 == 0) out += 'u';
      }
      if (n % 1000 != 0) out += 'u';
    } else if (v.isDevice()) {
      string(v.toDevice().str());
    } else {
      FIXRES_FAIL(WeightsError, "cannot save a value of type ", v.tagKind(),
                  " in a torch.save file");
    }
  }

 private:
  void integer(int64_t i) {
    if (i >= 0 && i < 256) {
      out += 'K';
      out += static_cast<char>(i);
    } else if (i >= 0 && i < 65536) {
      out += 'M';
      le(static_cast<uint64_t>(i), 2);
    } else if (i >= INT32_MIN && i <= INT32_MAX) {
      out += 'J';
      le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(i))), 4);
    } else {
      out += '\x8a';
      out += '\x08';
      le(static_cast<uint64_t>(i), 8);
    }
  }
  void le(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) out += static_cast<char>((v >> (8 * k)) & 0xff);
  }
  void string(const std::string& s) {
    out += 'X';
    le(s.size(), 4);
    out += s;
  }
  void global(const char* module, const std::string& name) {
    out += 'c';
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void tensor(const at::Tensor& t) {
    FIXRES_CHECK(t.defined(), WeightsError, "cannot save an undefined tensor");
    FIXRES_CHECK(t.layout() == at::kStrided && !t.is_quantized() && !t.is_meta(), WeightsError,
                 "cannot save a ", t.layout(), " / quantized / meta tensor");
    const c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
    auto it = keys_.find(impl);
    if (it == keys_.end()) {
      int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
      at::Tensor flat = at::empty({0}, t.options()).set_(t.storage(), 0, {numel}, {1});
      it = keys_.emplace(impl, std::to_string(storages.size())).first;
      storages.push_back({it->second, flat});
    }
    const at::Tensor& flat = storages[std::stoul(it->second)].flat;
    global("torch._utils", "_rebuild_tensor_v2");
    out += '(';
    // persistent id: ('storage', torch.XStorage, key, location, numel)
    out += '(';
    string("storage");
    global("torch", storageGlobalName(t.scalar_type()));
    string(it->second);
    string("cpu");
    integer(flat.numel());
    out += 't';
    out += 'Q';
    integer(t.storage_offset());
    out += '(';
    for (auto s : t.sizes()) integer(s);
    out += 't';
    out += '(';
    for (auto s : t.strides()) integer(s);
    out += 't';
    out += '\x89';  // requires_grad = False
    global("collections", "OrderedDict");
    out += ")R";  // backward hooks: OrderedDict()
    out += 't';
    out += 'R';
  }

  std::unordered_map<const c10::StorageImpl*, std::string> keys_;
};

// Buffered writes to a file descriptor that never fail towards the zip writer (it cannot
// unwind through its C code): the first error is recorded and later writes are dropped.
class FdSink {
 public:
  explicit FdSink(int fd) : fd_(fd) { buf_.reserve(kBuffer); }
  size_t write(const void* data, size_t n) {
    if (!error_.empty()) return n;
    const char* p = static_cast<const char*>(data);
    if (buf_.size() + n > kBuffer) flush();
    if (n >= kBuffer) {
      raw(p, n);
    } else {
      buf_.insert(buf_.end(), p, p + n);
    }
    return n;
  }
  void flush() {
    if (!buf_.empty()) raw(buf_.data(), buf_.size());
    buf_.clear();
  }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kBuffer = size_t(1) << 20;
  void raw(const char* p, size_t n) {
    while (n > 0 && error_.empty()) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errnoText();
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  int fd_;
  std::vector<char> buf_;
  std::string error_;
};

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ (uint64_t(::getpid()) << 32));
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

void writeTorchFile(const std::string& path, const c10::IValue& value) {
  Pickler pickler;
  pickler.begin();
  pickler.value(value);
  pickler.end();

  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  FIXRES_CHECK(!base.empty(), WeightsError, "cannot write ", path, ": not a file name");

  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = dir + "/." + base + ".tmp-" + randomSuffix();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FIXRES_CHECK(fd >= 0 || errno == EEXIST, WeightsError, "cannot write ", path,
                 ": cannot create a temporary file in ", dir, ": ", errnoText());
  }
  FIXRES_CHECK(fd >= 0, WeightsError, "cannot write ", path, ": no free temporary file name");

  std::string failure;
  FdSink sink(fd);
  try {
    caffe2::serialize::PyTorchStreamWriter writer(
        [&sink](const void* data, size_t n) -> size_t { return sink.write(data, n); });
    writer.writeRecord("data.pkl", pickler.out.data(), pickler.out.size());
    writer.writeRecord("byteorder", "little", 6);
    for (const auto& s : pickler.storages) {
      at::Tensor cpu = s.flat.device().is_cpu() ? s.flat : s.flat.cpu();
      writer.writeRecord("data/" + s.key, cpu.data_ptr(), cpu.nbytes());
      if (!sink.error().empty()) break;
    }
    writer.writeEndOfFile();
  } catch (const c10::Error& e) {
    failure = oneLine(e.what());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  sink.flush();
  if (failure.empty()) failure = sink.error();
  if (failure.empty() && ::fsync(fd) != 0) failure = "fsync: " + errnoText();
  if (::close(fd) != 0 && failure.empty()) failure = "close: " + errnoText();
  if (failure.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
    failure = "rename to " + path + ": " + errnoText();
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    FIXRES_FAIL(WeightsError, "cannot write ", path, ": ", failure,
                " (any previous file there is unchanged)");
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on directories
    ::close(dfd);
  }
}

}  // namespace fixres::models
