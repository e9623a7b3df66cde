// A pickle reader restricted to data: the bytes of one pickle -> an IValue. It never imports or
// calls anything (see PickleGlobals for what the callables it meets become); tensor storages are
// supplied by a StorageResolver, so it reads the pickle of any torch.save container.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fixres/weights/StorageResolver.h"

namespace fixres::models {

// Reads pickle protocols 0-5 as Python writes them, less what no torch.save file holds: text
// strings (STRING, UNICODE), PERSID, INST/OBJ, the extension registry (EXT*) and out-of-band
// buffers (protocol 5's BYTEARRAY8, NEXT_BUFFER, READONLY_BUFFER).
class Unpickler {
 public:
  // `data` (size bytes, not owned) and `storages` must outlive the Unpickler; `source` names the
  // pickle in messages ("data.pkl"). Reading starts at data[0].
  Unpickler(const char* data, size_t size, StorageResolver& storages,
            std::string source = "data.pkl");
  ~Unpickler();
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  // Reads one pickle, up to and including its STOP opcode (call once), and converts it (see
  // toIValue in PickleObject.h): dicts and OrderedDicts -> GenericDict in insertion order, lists
  // and sets -> GenericList, tuples -> Tuple, numpy scalars -> int/float/bool, torch globals
  // (dtypes) -> their dotted name as a str; tensors as the StorageResolver makes them; other
  // Python objects -> None (see ignoredObjects()). Any malformed input -> WeightsError naming
  // `source` ("data.pkl is truncated (...)", "unsupported pickle opcode 0x.. at offset N in
  // data.pkl", ...), never another exception type; the resolver's own WeightsErrors pass through.
  // A pickle past the bounds of PickleObject.h (kMaxPickleDepth levels of nesting,
  // kMaxPickleValues values) fails where it passes them ("data.pkl nests too deeply", "data.pkl
  // holds more than N values"), before the rest is made: position() then tells where.
  c10::IValue parse();

  // Bytes consumed: after parse(), the offset just past STOP (where a following pickle of the
  // same stream starts); after a failed parse(), where reading stopped.
  size_t position() const;

  // After a failed parse(): whether it failed for want of bytes past the end of the data (a
  // reader holding a prefix of a longer stream may retry with more of it).
  bool ranOut() const;

  // Python class names of the objects parse() could not represent (mapped to None), each once.
  const std::vector<std::string>& ignoredObjects() const;

 private:
  class Machine;
  std::unique_ptr<Machine> machine_;
};

}  // namespace fixres::models
