// Pickles built to exhaust the reader: containers nested 100,000 and 1,000,000 levels deep in
// every form a pickle can nest them (lists, tuples, dicts, sets, MARK groups, built from the
// inside out or from the outside in through the memo), and flat pickles of millions of values.
// Each is refused with a WeightsError (exit code 4) where it passes the bound, before the rest is
// built: read raw by the Unpickler and as the data.pkl of a torch.save archive.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/weights/PickleObject.h"
#include "fixres/weights/TorchFile.h"
#include "fixres/weights/Unpickler.h"
#include "fixres/weights/ZipArchive.h"

namespace fixres::models {
namespace {

using namespace std::string_literals;  // "h\x00"s keeps its NUL byte

const std::string kProto = "\x80\x02";

std::string repeat(const std::string& piece, size_t n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (size_t k = 0; k < n; ++k) out += piece;
  return out;
}
std::string u32(uint32_t v) {
  std::string out(4, '\0');
  for (int k = 0; k < 4; ++k) out[k] = static_cast<char>((v >> (8 * k)) & 0xff);
  return out;
}

// An adversarial pickle of n levels or n values.
struct Bomb {
  std::string name;
  std::function<std::string(size_t)> make;
  // Where reading must have stopped at the latest, for n: the bound is checked before the rest.
  std::function<size_t(size_t)> stopsBy;
};

size_t afterDepthBound(size_t bytesPerLevel, size_t prefix) {
  return prefix + bytesPerLevel * (kMaxPickleDepth + 1);
}

const std::vector<Bomb>& nestingBombs() {
  static const std::vector<Bomb> bombs = {
      // [[[...]]] built from the inside out: n empty lists, then n - 1 APPENDs.
      {"lists inside out",
       [](size_t n) { return kProto + repeat("]", n) + repeat("a", n - 1) + "."; },
       [](size_t n) { return afterDepthBound(1, 2 + n); }},
      // The same with MARK ... LIST groups: n MARKs open at once.
      {"MARK lists", [](size_t n) { return kProto + repeat("(", n) + repeat("l", n) + "."; },
       [](size_t) { return afterDepthBound(1, 2); }},
      // (((None,),),) with TUPLE1: one byte a level.
      {"tuples", [](size_t n) { return kProto + "N" + repeat("\x85", n) + "."; },
       [](size_t) { return afterDepthBound(1, 3); }},
      {"MARK tuples", [](size_t n) { return kProto + repeat("(", n) + repeat("t", n) + "."; },
       [](size_t) { return afterDepthBound(1, 2); }},
      // {1: {1: {...}}} inside out: a dict, n - 1 (key, dict) pairs, n - 1 SETITEMs.
      {"dicts inside out",
       [](size_t n) { return kProto + "}" + repeat("K\x01}", n - 1) + repeat("s", n - 1) + "."; },
       [](size_t n) { return afterDepthBound(1, 3 + 3 * (n - 1)); }},
      // frozenset((frozenset((...,)),)): REDUCE of builtins.frozenset per level (the global
      // pushed n times first, from the memo, then the innermost set, then the calls).
      {"sets through REDUCE",
       [](size_t n) {
         return kProto + "c__builtin__\nfrozenset\nq\x00"s + repeat("h\x00"s, n) + "]" +
                repeat("\x85\x85R", n) + ".";
       },
       [](size_t n) { return afterDepthBound(3, 27 + 2 * n + 1); }},
      // [[[...]]] from the outside in: each new list is appended to the previous one, taken
      // back from the memo (the container is already inside another when it is filled).
      {"lists outside in",
       [](size_t n) {
         std::string out = kProto + "]r" + u32(0);
         out.reserve(out.size() + 14 * n + 8);
         for (size_t k = 0; k < n; ++k)
           out += "j" + u32(static_cast<uint32_t>(k)) + "]r" + u32(static_cast<uint32_t>(k + 1)) +
                  "a0";
         return out + "0j" + u32(0) + ".";
       },
       [](size_t) { return afterDepthBound(14, 7); }},
      // {k: {k: ...}} from the outside in, as above with SETITEM.
      {"dicts outside in",
       [](size_t n) {
         std::string out = kProto + "}r" + u32(0);
         for (size_t k = 0; k < n; ++k)
           out += "j" + u32(static_cast<uint32_t>(k)) + "K\x01}r" +
                  u32(static_cast<uint32_t>(k + 1)) + "s0";
         return out + "j" + u32(0) + ".";
       },
       [](size_t) { return afterDepthBound(16, 7); }},
  };
  return bombs;
}

// Flat pickles of more values than kMaxPickleValues: objects, references to one object through
// the memo and DUP, memo entries.
const std::vector<Bomb>& wideBombs() {
  static const std::vector<Bomb> bombs = {
      {"a list of n Nones", [](size_t n) { return kProto + "(" + repeat("N", n) + "l."; }},
      {"a list of n ints", [](size_t n) { return kProto + "(" + repeat("K\x07", n) + "l."; }},
      {"n references to one list",
       [](size_t n) { return kProto + "]q\x00("s + repeat("h\x00"s, n) + "l."; }},
      {"n DUPs", [](size_t n) { return kProto + "N" + repeat("2", n) + "."; }},
      {"n memo entries", [](size_t n) { return kProto + "N" + repeat("\x94", n) + "."; }},
      // set(x) of one n-item list, again and again: each call would copy n references.
      {"set() of a long list, repeated",
       [](size_t n) {
         const size_t items = n / 8;
         return kProto + "c__builtin__\nset\nq\x00("s + repeat("N", items) + "lq\x01" +
                repeat("h\x00h\x01\x85R0"s, 16) + "N.";
       }},
  };
  return bombs;
}

class NoStorages final : public StorageResolver {
 public:
  at::Tensor tensor(const StorageRef&, int64_t, c10::IntArrayRef, c10::IntArrayRef) override {
    throw WeightsError("no storages here");
  }
};

// Reads `pickle` raw; returns the error and the offset where reading stopped.
std::pair<std::string, size_t> refusal(const std::string& pickle) {
  NoStorages storages;
  Unpickler unpickler(pickle.data(), pickle.size(), storages);
  try {
    unpickler.parse();
  } catch (const WeightsError& e) {
    EXPECT_EQ(exitCodeOf(e), ExitCode::kWeights);
    return {e.what(), unpickler.position()};
  }
  ADD_FAILURE() << "read without an error";
  return {"", unpickler.position()};
}

// `pickle` as the data.pkl of a torch.save archive in memory, read as fixres reads weights.
std::string refusalAsTorchFile(const std::string& pickle) {
  std::string zip;
  {
    ZipArchiveWriter writer([&zip](const void* data, size_t n) -> size_t {
      zip.append(static_cast<const char*>(data), n);
      return n;
    });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    writer.writeRecord("byteorder", "little", 6);
    writer.finish();
  }
  try {
    TorchArchive(zip.data(), zip.size(), "bomb.pth").read(/*lazy=*/true);
  } catch (const WeightsError& e) {
    return e.what();
  }
  ADD_FAILURE() << "read without an error";
  return "";
}

// The nesting bound, or the values bound when the pickle makes too many objects first (1,000,000
// dicts and their keys).
bool namesABound(const std::string& message, const std::string& source) {
  return message.find(source + " nests too deeply") != std::string::npos ||
         message.find(source + " holds more than") != std::string::npos;
}

TEST(PickleBounds, DeepNestingIsRefusedWhereItPassesTheBound) {
  for (const Bomb& bomb : nestingBombs()) {
    for (size_t n : {size_t(100000), size_t(1000000)}) {
      SCOPED_TRACE(bomb.name + ", " + std::to_string(n) + " levels");
      const std::string pickle = bomb.make(n);
      const auto [message, stoppedAt] = refusal(pickle);
      EXPECT_TRUE(namesABound(message, "data.pkl")) << message;
      EXPECT_LE(stoppedAt, bomb.stopsBy(n)) << "of " << pickle.size() << " bytes";
      const std::string viaZip = refusalAsTorchFile(pickle);
      EXPECT_TRUE(namesABound(viaZip, "bomb.pth: data.pkl")) << viaZip;
    }
  }
}

TEST(PickleBounds, NestingUpToTheBoundIsRead) {
  const size_t levels = kMaxPickleDepth - 1;  // the innermost list at depth 199
  NoStorages storages;
  const std::string pickle = kProto + repeat("]", levels + 1) + repeat("a", levels) + ".";
  c10::IValue v = Unpickler(pickle.data(), pickle.size(), storages).parse();
  size_t depth = 0;
  while (v.isList() && v.toListRef().size() == 1) {
    v = v.toListRef()[0];
    ++depth;
  }
  EXPECT_EQ(depth, levels);
  const std::string deeper = kProto + repeat("]", levels + 2) + repeat("a", levels + 1) + ".";
  EXPECT_NE(refusal(deeper).first.find("nests too deeply"), std::string::npos);
}

TEST(PickleBounds, MillionsOfValuesAreRefusedAtTheBound) {
  for (const Bomb& bomb : wideBombs()) {
    SCOPED_TRACE(bomb.name);
    const std::string pickle = bomb.make(kMaxPickleValues + 16);
    const auto [message, stoppedAt] = refusal(pickle);
    EXPECT_NE(
        message.find("data.pkl holds more than " + std::to_string(kMaxPickleValues) + " values"),
        std::string::npos)
        << message;
    EXPECT_LT(stoppedAt, pickle.size());
  }
  // And as a torch.save file (the first form only: each takes a few hundred MB at the bound).
  const std::string viaZip = refusalAsTorchFile(wideBombs()[0].make(kMaxPickleValues + 16));
  EXPECT_NE(viaZip.find("bomb.pth: data.pkl holds more than"), std::string::npos) << viaZip;
}

TEST(PickleBounds, AWideListUnderTheBoundIsRead) {
  NoStorages storages;
  const std::string pickle = kProto + "(" + repeat("K\x07", 100000) + "l.";
  c10::IValue v = Unpickler(pickle.data(), pickle.size(), storages).parse();
  ASSERT_TRUE(v.isList());
  EXPECT_EQ(v.toListRef().size(), 100000u);
}

}  // namespace
}  // namespace fixres::models
