// The Python callables a torch.save pickle calls (REDUCE, NEWOBJ) and its persistent ids
// (BINPERSID), interpreted as data: a fixed list of torch, numpy and collections names is
// understood; anything else becomes an opaque object recorded by class name, never looked up or
// called. Internal to the Unpickler.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fixres/weights/PickleObject.h"
#include "fixres/weights/StorageResolver.h"

namespace fixres::models {

class PickleGlobals {
 public:
  // `arena` holds the objects made; `storages` builds the tensors (both referenced: they must
  // outlive this object); `source` names the pickle in messages ("data.pkl").
  PickleGlobals(PickleArena& arena, StorageResolver& storages, std::string source)
      : arena_(arena), storages_(storages), source_(std::move(source)) {}

  // REDUCE: callable(*args). Understood: dict and OrderedDict construction, tensor and
  // parameter rebuilders (tensors from storages_), torch.Size, the TorchScript list builders,
  // set/frozenset (-> list), torch.device (-> str), numpy dtypes and scalars (-> int/float/bool),
  // _codecs.encode (protocol 2 bytes). WeightsError on malformed arguments.
  PickleObjectPtr call(const PickleObjectPtr& callable, const PickleObjectPtr& args);
  // NEWOBJ: cls.__new__(cls, ...): an empty dict (OrderedDict, defaultdict) or list (set), else
  // an opaque object.
  PickleObjectPtr newObject(const PickleObjectPtr& cls);
  // BINPERSID: a tensor storage ('storage', torch.XStorage, key, location, numel), with view
  // metadata (view key, offset, size) or None as sixth item in pre-1.6 files; declared to
  // storages_. WeightsError for any other persistent id.
  PickleObjectPtr persistentLoad(const PickleObjectPtr& pid);
  // An object of class `name` that has no IValue form (recorded in ignoredObjects()).
  PickleObjectPtr opaque(const std::string& name);
  // An opaque object of class `cls` (its name when a global, else "<object>").
  PickleObjectPtr opaqueOfClass(const PickleObjectPtr& cls);

  // Class names of the opaque objects made, each once, in first-seen order.
  const std::vector<std::string>& ignoredObjects() const { return ignored_; }

 private:
  PickleObjectPtr rebuildTensor(const PickleObjectPtr& args, const std::string& fn);
  PickleObjectPtr numpyScalar(const PickleObjectPtr& dtype, const PickleObjectPtr& data);
  std::string latin1FromUtf8(const std::string& utf8) const;

  PickleArena& arena_;
  StorageResolver& storages_;
  std::string source_;
  std::vector<std::string> ignored_;
  int callDepth_ = 0;
};

}  // namespace fixres::models
