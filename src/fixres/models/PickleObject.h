// Python objects as the Unpickler builds them (only the kinds torch.save pickles contain), the
// arena that owns them, and their conversion to IValues. Internal to the pickle reader.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "fixres/models/StorageResolver.h"

namespace fixres::models {

struct PickleObject;
// Not owning: every object belongs to the PickleArena that made it. The memo and containers may
// hold the same object several times, and a pickle can make a container hold itself.
using PickleObjectPtr = PickleObject*;

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
};

// Owns the objects of one unpickling (freed together, cycles included); addresses are stable.
class PickleArena {
 public:
  PickleObjectPtr make(PickleObject::Kind kind);
  PickleObjectPtr makeBool(bool value);
  PickleObjectPtr makeInt(int64_t value);
  PickleObjectPtr makeFloat(double value);
  PickleObjectPtr makeStr(PickleObject::Kind kind, std::string value);  // kStr, kBytes, ...
  PickleObjectPtr makeTuple(std::vector<PickleObjectPtr> items);

 private:
  std::deque<PickleObject> objects_;
};

// "int", "tuple", ... for messages.
const char* kindName(PickleObject::Kind kind);

// Converts `root` to IValues; objects reachable twice are converted once (shared IValues).
// dict -> GenericDict in insertion order (key type str/int/float when all keys are, value type
// Tensor/str/int/float likewise, else Any); list and set -> GenericList typed the same way;
// tuple -> Tuple; str, bytes and globals -> str; storages, numpy dtypes and opaque objects ->
// None. WeightsError (naming `source`, e.g. "data.pkl") when nesting exceeds 200 levels or a
// container holds itself (both "nests too deeply"), or a dict key is not a str, int, float or
// bool.
c10::IValue toIValue(const PickleObjectPtr& root, const std::string& source);

}  // namespace fixres::models
