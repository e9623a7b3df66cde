// The pickle stack machine: opcodes -> PickleObjects -> IValues.
#include "fixres/weights/Unpickler.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/weights/PickleGlobals.h"
#include "fixres/weights/PickleObject.h"
#include "fixres/weights/PickleOpcode.h"

namespace fixres::models {
namespace {
using Kind = PickleObject::Kind;
using Obj = PickleObjectPtr;
}  // namespace

class Unpickler::Machine {
 public:
  Machine(const char* data, size_t size, StorageResolver& storages, std::string source)
      : data_(data),
        size_(size),
        source_(std::move(source)),
        arena_(source_),
        globals_(arena_, storages, source_) {}

  Obj run() {
    for (;;) {
      uint8_t op = u8();
      if (toPickleOpcode(op) == PickleOpcode::kStop) break;
      step(op);
    }
    FIXRES_CHECK(stack_.size() == 1, WeightsError, "malformed pickle: ", stack_.size(),
                 " values left at STOP");
    return stack_.back();
  }

  size_t position() const { return pos_; }
  bool ranOut() const { return ranOut_; }
  const std::string& source() const { return source_; }
  const std::vector<std::string>& ignoredObjects() const { return globals_.ignoredObjects(); }

 private:
  // ---- reading the stream
  void need(size_t n) {
    ranOut_ = !(pos_ + n <= size_ && pos_ + n >= pos_);
    FIXRES_CHECK(!ranOut_, WeightsError, source_, " is truncated (needed ", n, " bytes at offset ",
                 pos_, ")");
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
    ranOut_ = n > size_;
    FIXRES_CHECK(!ranOut_, WeightsError, source_, " is corrupt (string of ", n, " bytes)");
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

  // ---- stack, marks and memo
  // (Objects made are counted by the arena; pushReference counts one more reference to one.)
  void push(Obj o) { stack_.push_back(std::move(o)); }
  void pushReference(Obj o) {
    arena_.count();
    push(std::move(o));
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
  void memoPut(uint64_t k) {
    arena_.count();
    memo_[k] = top();
  }

  // ---- containers
  void setItems(const Obj& target, const std::vector<Obj>& kv) {
    FIXRES_CHECK(kv.size() % 2 == 0, WeightsError, "malformed pickle: odd SETITEMS");
    if (target->kind != Kind::kDict) return;  // state of an unsupported object: ignored
    for (size_t k = 0; k < kv.size(); k += 2) arena_.addEntry(target, kv[k], kv[k + 1]);
  }
  void appendItems(const Obj& target, const std::vector<Obj>& items) {
    if (target->kind != Kind::kList) return;
    for (const auto& x : items) arena_.add(target, x);
  }

  // ---- scalars
  // LONG1, LONG4: little-endian two's complement of n bytes (n <= 8 here).
  Obj longInt(size_t lengthBytes) {
    uint64_t n = uintLE(lengthBytes);
    FIXRES_CHECK(n <= 8, WeightsError, "integer of ", n, " bytes in ", source_, " is too large");
    uint64_t v = n ? uintLE(n) : 0;
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
    return arena_.makeInt(static_cast<int64_t>(v));
  }
  // INT, LONG: decimal text ("00"/"01" after INT are False/True; LONG may end in 'L').
  Obj textInt(bool isLong) {
    std::string s = line();
    if (!s.empty() && s.back() == 'L') s.pop_back();
    if (!isLong && (s == "00" || s == "01")) return arena_.makeBool(s == "01");
    return arena_.makeInt(std::stoll(s));
  }
  // BINFLOAT: big-endian IEEE double.
  Obj binFloat() {
    uint64_t bits = 0;
    need(8);
    for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(data_[pos_ + k]);
    pos_ += 8;
    double f;
    std::memcpy(&f, &bits, 8);
    return arena_.makeFloat(f);
  }

  void step(uint8_t byte) {
    using Op = PickleOpcode;
    const Op op = toPickleOpcode(byte);
    switch (op) {
      case Op::kProto:
        u8();
        break;
      case Op::kFrame:
        uintLE(8);
        break;
      // Scalars.
      case Op::kNone:
        push(arena_.make(Kind::kNone));
        break;
      case Op::kNewTrue:
      case Op::kNewFalse:
        push(arena_.makeBool(op == Op::kNewTrue));
        break;
      case Op::kBinInt:
        push(arena_.makeInt(static_cast<int32_t>(uintLE(4))));
        break;
      case Op::kBinInt1:
        push(arena_.makeInt(uintLE(1)));
        break;
      case Op::kBinInt2:
        push(arena_.makeInt(uintLE(2)));
        break;
      case Op::kLong1:
      case Op::kLong4:
        push(longInt(op == Op::kLong1 ? 1 : 4));
        break;
      case Op::kInt:
      case Op::kLong:
        push(textInt(op == Op::kLong));
        break;
      case Op::kBinFloat:
        push(binFloat());
        break;
      case Op::kFloat:
        push(arena_.makeFloat(std::stod(line())));
        break;
      case Op::kBinUnicode:
      case Op::kBinString:
        push(arena_.makeStr(Kind::kStr, bytes(uintLE(4))));
        break;
      case Op::kShortBinUnicode:
      case Op::kShortBinString:
        push(arena_.makeStr(Kind::kStr, bytes(uintLE(1))));
        break;
      case Op::kBinUnicode8:
        push(arena_.makeStr(Kind::kStr, bytes(uintLE(8))));
        break;
      case Op::kBinBytes:
        push(arena_.makeStr(Kind::kBytes, bytes(uintLE(4))));
        break;
      case Op::kShortBinBytes:
        push(arena_.makeStr(Kind::kBytes, bytes(uintLE(1))));
        break;
      case Op::kBinBytes8:
        push(arena_.makeStr(Kind::kBytes, bytes(uintLE(8))));
        break;
      // Tuples, lists, sets, dicts.
      case Op::kEmptyTuple:
        push(arena_.makeTuple({}));
        break;
      case Op::kTuple:
        push(arena_.makeTuple(popMark()));
        break;
      case Op::kTuple1:
      case Op::kTuple2:
      case Op::kTuple3: {
        size_t n = op == Op::kTuple1 ? 1 : op == Op::kTuple2 ? 2 : 3;
        FIXRES_CHECK(stack_.size() >= n, WeightsError, "malformed pickle: short TUPLE");
        std::vector<Obj> items(stack_.end() - n, stack_.end());
        stack_.resize(stack_.size() - n);
        push(arena_.makeTuple(items));
        break;
      }
      case Op::kEmptyList:
      case Op::kEmptySet:
        push(arena_.make(Kind::kList));
        break;
      case Op::kList:
      case Op::kFrozenSet:
        push(arena_.makeList(popMark()));
        break;
      case Op::kAppend: {
        Obj v = pop();
        appendItems(top(), {v});
        break;
      }
      case Op::kAppends:
      case Op::kAddItems: {
        auto items = popMark();
        appendItems(top(), items);
        break;
      }
      case Op::kEmptyDict:
        push(arena_.make(Kind::kDict));
        break;
      case Op::kDict: {
        auto d = arena_.make(Kind::kDict);
        setItems(d, popMark());
        push(d);
        break;
      }
      case Op::kSetItem: {
        Obj v = pop();
        Obj k = pop();
        setItems(top(), {k, v});
        break;
      }
      case Op::kSetItems: {
        auto kv = popMark();
        setItems(top(), kv);
        break;
      }
      // Stack.
      case Op::kMark:
        arena_.checkMarks(marks_.size());
        marks_.push_back(stack_.size());
        break;
      case Op::kPop:
        pop();
        break;
      case Op::kPopMark:
        popMark();
        break;
      case Op::kDup: {
        Obj copy = top();
        pushReference(std::move(copy));
        break;
      }
      // Globals, calls, objects.
      case Op::kGlobal: {
        std::string module = line();
        std::string name = line();
        push(arena_.makeStr(Kind::kGlobal, module + "." + name));
        break;
      }
      case Op::kStackGlobal: {
        Obj name = pop();
        Obj module = pop();
        push(arena_.makeStr(Kind::kGlobal, module->s + "." + name->s));
        break;
      }
      case Op::kReduce: {
        Obj args = pop();
        Obj fn = pop();
        push(globals_.call(fn, args));
        break;
      }
      case Op::kNewObj: {
        pop();  // args
        Obj cls = pop();
        push(globals_.newObject(cls));
        break;
      }
      case Op::kNewObjEx: {
        pop();  // kwargs
        pop();  // args
        Obj cls = pop();
        push(globals_.opaqueOfClass(cls));
        break;
      }
      case Op::kBuild:  // object state (OrderedDict _metadata, ...): ignored
        pop();
        top();
        break;
      case Op::kBinPersId:
        push(globals_.persistentLoad(pop()));
        break;
      // Memo.
      case Op::kPut:
        memoPut(std::stoull(line()));
        break;
      case Op::kBinPut:
        memoPut(uintLE(1));
        break;
      case Op::kLongBinPut:
        memoPut(uintLE(4));
        break;
      case Op::kMemoize:
        memoPut(memo_.size());
        break;
      case Op::kGet:
        pushReference(memoGet(std::stoull(line())));
        break;
      case Op::kBinGet:
        pushReference(memoGet(uintLE(1)));
        break;
      case Op::kLongBinGet:
        pushReference(memoGet(uintLE(4)));
        break;
      default:
        FIXRES_FAIL(WeightsError, "unsupported pickle opcode 0x", std::hex, int(byte),
                    " at offset ", std::dec, pos_ - 1, " in ", source_);
    }
  }

  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ranOut_ = false;
  std::string source_;
  PickleArena arena_;  // owns every object the stack, the memo and the globals refer to
  PickleGlobals globals_;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj> memo_;
};

Unpickler::Unpickler(const char* data, size_t size, StorageResolver& storages, std::string source)
    : machine_(std::make_unique<Machine>(data, size, storages, std::move(source))) {}

Unpickler::~Unpickler() = default;

c10::IValue Unpickler::parse() {
  const std::string& source = machine_->source();
  try {
    return toIValue(machine_->run(), source);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    FIXRES_FAIL(WeightsError, "cannot decode ", source, ": ", oneLine(e.what()));
  } catch (const std::logic_error& e) {  // std::stoll and friends on a malformed text opcode
    FIXRES_FAIL(WeightsError, "malformed ", source, ": ", e.what());
  } catch (const std::runtime_error& e) {  // from LibTorch outside c10::Error
    FIXRES_FAIL(WeightsError, "cannot decode ", source, ": ", oneLine(e.what()));
  }
}

size_t Unpickler::position() const {
  return machine_->position();
}

bool Unpickler::ranOut() const {
  return machine_->ranOut();
}

const std::vector<std::string>& Unpickler::ignoredObjects() const {
  return machine_->ignoredObjects();
}

}  // namespace fixres::models
