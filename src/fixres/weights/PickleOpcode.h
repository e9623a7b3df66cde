// The opcodes of Python's pickle format, protocols 0-5 (names as in CPython's pickletools).
// Shared by the Unpickler and the Pickler; which ones each supports is said there.
#pragma once

#include <cstdint>

namespace fixres::models {

enum class PickleOpcode : char {
  // Protocol 0-1: stack and memo.
  kMark = '(',        // MARK
  kStop = '.',        // STOP
  kPop = '0',         // POP
  kPopMark = '1',     // POP_MARK
  kDup = '2',         // DUP
  kPut = 'p',         // PUT (text index)
  kBinPut = 'q',      // BINPUT (1-byte index)
  kLongBinPut = 'r',  // LONG_BINPUT (4-byte index)
  kGet = 'g',         // GET
  kBinGet = 'h',      // BINGET
  kLongBinGet = 'j',  // LONG_BINGET
  // Protocol 0-1: scalars.
  kNone = 'N',            // NONE
  kInt = 'I',             // INT (text; "00"/"01" are False/True)
  kBinInt = 'J',          // BININT (4-byte signed)
  kBinInt1 = 'K',         // BININT1 (1-byte unsigned)
  kBinInt2 = 'M',         // BININT2 (2-byte unsigned)
  kLong = 'L',            // LONG (text)
  kFloat = 'F',           // FLOAT (text)
  kBinFloat = 'G',        // BINFLOAT (8-byte big-endian double)
  kString = 'S',          // STRING (quoted text)
  kBinString = 'T',       // BINSTRING (4-byte length)
  kShortBinString = 'U',  // SHORT_BINSTRING (1-byte length)
  kUnicode = 'V',         // UNICODE (raw-unicode-escape text)
  kBinUnicode = 'X',      // BINUNICODE (4-byte length, UTF-8)
  // Protocol 0-1: containers.
  kEmptyTuple = ')',  // EMPTY_TUPLE
  kTuple = 't',       // TUPLE (items since MARK)
  kEmptyList = ']',   // EMPTY_LIST
  kList = 'l',        // LIST (items since MARK)
  kAppend = 'a',      // APPEND
  kAppends = 'e',     // APPENDS (items since MARK)
  kEmptyDict = '}',   // EMPTY_DICT
  kDict = 'd',        // DICT (key/value pairs since MARK)
  kSetItem = 's',     // SETITEM
  kSetItems = 'u',    // SETITEMS (key/value pairs since MARK)
  // Protocol 0-1: objects.
  kGlobal = 'c',     // GLOBAL (module and name as text lines)
  kReduce = 'R',     // REDUCE (callable, args tuple)
  kBuild = 'b',      // BUILD (object, state)
  kInst = 'i',       // INST
  kObj = 'o',        // OBJ
  kPersId = 'P',     // PERSID (text persistent id)
  kBinPersId = 'Q',  // BINPERSID (persistent id object)
  // Protocol 2.
  kProto = '\x80',     // PROTO
  kNewObj = '\x81',    // NEWOBJ (cls, args)
  kExt1 = '\x82',      // EXT1 (extension registry)
  kExt2 = '\x83',      // EXT2
  kExt4 = '\x84',      // EXT4
  kTuple1 = '\x85',    // TUPLE1
  kTuple2 = '\x86',    // TUPLE2
  kTuple3 = '\x87',    // TUPLE3
  kNewTrue = '\x88',   // NEWTRUE
  kNewFalse = '\x89',  // NEWFALSE
  kLong1 = '\x8a',     // LONG1 (1-byte length, little-endian two's complement)
  kLong4 = '\x8b',     // LONG4 (4-byte length)
  // Protocol 3.
  kBinBytes = 'B',       // BINBYTES (4-byte length)
  kShortBinBytes = 'C',  // SHORT_BINBYTES (1-byte length)
  // Protocol 4.
  kShortBinUnicode = '\x8c',  // SHORT_BINUNICODE
  kBinUnicode8 = '\x8d',      // BINUNICODE8
  kBinBytes8 = '\x8e',        // BINBYTES8
  kEmptySet = '\x8f',         // EMPTY_SET
  kAddItems = '\x90',         // ADDITEMS (items since MARK)
  kFrozenSet = '\x91',        // FROZENSET (items since MARK)
  kNewObjEx = '\x92',         // NEWOBJ_EX (cls, args, kwargs)
  kStackGlobal = '\x93',      // STACK_GLOBAL (module, name)
  kMemoize = '\x94',          // MEMOIZE
  kFrame = '\x95',            // FRAME (8-byte frame length)
  // Protocol 5 (out-of-band buffers).
  kByteArray8 = '\x96',      // BYTEARRAY8
  kNextBuffer = '\x97',      // NEXT_BUFFER
  kReadonlyBuffer = '\x98',  // READONLY_BUFFER
};

// The opcode a byte of the stream stands for (any byte converts; unknown ones fall to default:).
constexpr PickleOpcode toPickleOpcode(uint8_t byte) {
  return static_cast<PickleOpcode>(static_cast<char>(byte));
}

// The byte that encodes `op` in the stream.
constexpr char pickleByte(PickleOpcode op) {
  return static_cast<char>(op);
}

}  // namespace fixres::models
