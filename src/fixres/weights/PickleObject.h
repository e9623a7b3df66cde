// Python objects as the Unpickler builds them (only the kinds torch.save pickles contain), the
// arena that owns them, and their conversion to IValues. Internal to the pickle reader.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "fixres/weights/StorageResolver.h"

namespace fixres::models {

struct PickleObject;
// Not owning: every object belongs to the PickleArena that made it. The memo and containers may
// hold the same object several times, and a pickle can make a container hold itself.
using PickleObjectPtr = PickleObject*;

// Bounds of one pickle, checked while it is read, before the objects past them are made. A
// weight file nests a few levels and holds some tens of thousands of values (a ResNet-152
// checkpoint with its optimizer state: about 80,000): a pickle past
// these is refused (WeightsError) whatever it would have built, so neither its reading nor its
// conversion can exhaust the stack or the memory (about 300 bytes per value at most).
// Nesting: containers within containers, and MARKs open at once.
constexpr int kMaxPickleDepth = 200;
// Values: objects made plus the references to them a container, the stack or the memo stores.
constexpr size_t kMaxPickleValues = 2000000;

struct PickleObject {
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
    kGlobal,      // a module attribute: s = "module.name"
    kStorage,     // persistent id of a tensor storage: storage
    kTensor,      // tensor
    kNumpyDtype,  // s = numpy dtype string ("f8", "i8", ...)
    kOpaque,      // an object of an unsupported class: s = class name
  };

  Kind kind = Kind::kNone;
  bool b = false;                      // kBool
  int64_t i = 0;                       // kInt; kBool as 0/1
  double f = 0.0;                      // kFloat
  std::string s;                       // kStr, kBytes, kGlobal, kNumpyDtype, kOpaque
  std::vector<PickleObjectPtr> items;  // tuple, list, set
  std::vector<std::pair<PickleObjectPtr, PickleObjectPtr>> entries;  // dict, insertion order
  at::Tensor tensor;                                                 // kTensor
  StorageRef storage;                                                // kStorage
  // kStorage of a pre-1.6 file may be a view of `storage`: its first element there and its size.
  int64_t viewOffset = 0;
  int64_t viewNumel = 0;
  // Nesting seen while building, in levels: `height` below this object (0: a scalar or an empty
  // container), `depth` above it (0: in no container). Kept as items are added, not propagated
  // further (a container filled after it was put into another does not raise the other's
  // height): they catch the usual forms of deep nesting at once; toIValue checks the rest.
  int height = 0;
  int depth = 0;
};

// Owns the objects of one unpickling (freed together, cycles included, without recursion);
// addresses are stable. Every object and every reference stored goes through it, so it enforces
// kMaxPickleValues and kMaxPickleDepth: WeightsError naming `source` ("data.pkl holds more than
// 2000000 values ...", "data.pkl nests too deeply ...") before anything past a bound is made.
class PickleArena {
 public:
  explicit PickleArena(std::string source) : source_(std::move(source)) {}

  PickleObjectPtr make(PickleObject::Kind kind);
  PickleObjectPtr makeBool(bool value);
  PickleObjectPtr makeInt(int64_t value);
  PickleObjectPtr makeFloat(double value);
  PickleObjectPtr makeStr(PickleObject::Kind kind, std::string value);  // kStr, kBytes, ...
  PickleObjectPtr makeTuple(const std::vector<PickleObjectPtr>& items);
  PickleObjectPtr makeList(const std::vector<PickleObjectPtr>& items);

  // Appends `item` to the items of `container` (a list, set or tuple being built).
  void add(const PickleObjectPtr& container, const PickleObjectPtr& item);
  // Appends (key, value) to the entries of the dict `container`.
  void addEntry(const PickleObjectPtr& container, const PickleObjectPtr& key,
                const PickleObjectPtr& value);
  // Counts `n` references stored elsewhere (on the stack, in the memo) against kMaxPickleValues.
  void count(size_t n = 1);
  // Refuses one more MARK when `openMarks` are open already (nesting of kMaxPickleDepth).
  void checkMarks(size_t openMarks) const;

 private:
  void nest(const PickleObjectPtr& container, const PickleObjectPtr& item);

  std::string source_;
  size_t values_ = 0;
  std::deque<PickleObject> objects_;
};

// "int", "tuple", ... for messages.
const char* kindName(PickleObject::Kind kind);

// Converts `root` to IValues; objects reachable twice are converted once (shared IValues).
// dict -> GenericDict in insertion order (key type str/int/float when all keys are, value type
// Tensor/str/int/float likewise, else Any); list and set -> GenericList typed the same way;
// tuple -> Tuple; str, bytes and globals -> str; storages, numpy dtypes and opaque objects ->
// None. WeightsError (naming `source`, e.g. "data.pkl") when nesting exceeds kMaxPickleDepth
// levels or a container holds itself (both "nests too deeply"), or a dict key is not a str, int,
// float or bool. Recursive, but never deeper than kMaxPickleDepth calls.
c10::IValue toIValue(const PickleObjectPtr& root, const std::string& source);

}  // namespace fixres::models
