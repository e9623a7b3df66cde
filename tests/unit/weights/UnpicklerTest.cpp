// The pickle reader against Python's own pickle module (tests/reference/pickle_cases.py): the
// opcode enum, values pickled with protocols 0-5, malformed pickles, objects of unknown classes,
// and the storages of a torch.save data.pkl handed to a StorageResolver.
#include "fixres/weights/Unpickler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/weights/PickleOpcode.h"
#include "fixres/weights/StorageTypes.h"

namespace fixres::models {
namespace {

const nlohmann::json& referenceCases() {
  static const nlohmann::json cases =
      nlohmann::json::parse(fixres::testing::cachedReference("pickle_cases.py", ""));
  return cases;
}

std::string fromHex(const std::string& hex) {
  std::string out;
  for (size_t k = 0; k + 1 < hex.size(); k += 2)
    out += static_cast<char>(std::stoi(hex.substr(k, 2), nullptr, 16));
  return out;
}

std::string toHex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", c);
    out += buf;
  }
  return out;
}

// The canonical form of pickle_cases.py's canon(), rebuilt from what the Unpickler read.
std::string canon(const c10::IValue& v) {
  if (v.isNone()) return "N";
  if (v.isBool()) return v.toBool() ? "b:1" : "b:0";
  if (v.isInt()) return "i:" + std::to_string(v.toInt());
  if (v.isDouble()) {
    double d = v.toDouble();
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    char buf[20];
    std::snprintf(buf, sizeof(buf), "f:%016llx", static_cast<unsigned long long>(bits));
    return buf;
  }
  if (v.isString()) return "s:" + toHex(v.toStringRef());
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (size_t k = 0; k < parts.size(); ++k) out += (k ? "," : "") + parts[k];
    return out;
  };
  std::vector<std::string> parts;
  if (v.isList()) {
    for (const auto& x : v.toListRef()) parts.push_back(canon(x));
    return "[" + join(parts) + "]";
  }
  if (v.isTuple()) {
    for (const auto& x : v.toTupleRef().elements()) parts.push_back(canon(x));
    return "(" + join(parts) + ")";
  }
  if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict())
      parts.push_back(canon(e.key()) + "=" + canon(e.value()));
    return "{" + join(parts) + "}";
  }
  return "?" + v.tagKind();
}

// Long canonical forms: only the neighbourhood of the first difference is printed.
void expectSameCanon(const std::string& ours, const std::string& python) {
  if (ours == python) return;
  size_t k = 0;
  while (k < ours.size() && k < python.size() && ours[k] == python[k]) ++k;
  size_t from = k < 80 ? 0 : k - 80;
  ADD_FAILURE() << "first difference at " << k << ":\n  ours:   ..." << ours.substr(from, 160)
                << "\n  python: ..." << python.substr(from, 160);
}

// Meta tensors; records the storages asked for.
class RecordingStorages final : public StorageResolver {
 public:
  at::Tensor tensor(const StorageRef& storage, int64_t offset, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides) override {
    refs.push_back(storage);
    views.push_back({offset, sizes.vec(), strides.vec()});
    return at::empty_strided(sizes, strides,
                             at::TensorOptions().dtype(storage.dtype).device(at::kMeta));
  }
  struct View {
    int64_t offset;
    std::vector<int64_t> sizes, strides;
  };
  std::vector<StorageRef> refs;
  std::vector<View> views;
};

c10::IValue unpickle(const std::string& bytes, StorageResolver& storages,
                     std::vector<std::string>* ignored = nullptr) {
  Unpickler unpickler(bytes.data(), bytes.size(), storages);
  c10::IValue value = unpickler.parse();
  EXPECT_EQ(unpickler.position(), bytes.size());
  if (ignored) *ignored = unpickler.ignoredObjects();
  return value;
}

TEST(Unpickler, OpcodesAreThoseOfPythonsPickle) {
  const std::map<std::string, PickleOpcode> ours = {
      {"MARK", PickleOpcode::kMark},
      {"STOP", PickleOpcode::kStop},
      {"POP", PickleOpcode::kPop},
      {"POP_MARK", PickleOpcode::kPopMark},
      {"DUP", PickleOpcode::kDup},
      {"PUT", PickleOpcode::kPut},
      {"BINPUT", PickleOpcode::kBinPut},
      {"LONG_BINPUT", PickleOpcode::kLongBinPut},
      {"GET", PickleOpcode::kGet},
      {"BINGET", PickleOpcode::kBinGet},
      {"LONG_BINGET", PickleOpcode::kLongBinGet},
      {"NONE", PickleOpcode::kNone},
      {"INT", PickleOpcode::kInt},
      {"BININT", PickleOpcode::kBinInt},
      {"BININT1", PickleOpcode::kBinInt1},
      {"BININT2", PickleOpcode::kBinInt2},
      {"LONG", PickleOpcode::kLong},
      {"FLOAT", PickleOpcode::kFloat},
      {"BINFLOAT", PickleOpcode::kBinFloat},
      {"STRING", PickleOpcode::kString},
      {"BINSTRING", PickleOpcode::kBinString},
      {"SHORT_BINSTRING", PickleOpcode::kShortBinString},
      {"UNICODE", PickleOpcode::kUnicode},
      {"BINUNICODE", PickleOpcode::kBinUnicode},
      {"EMPTY_TUPLE", PickleOpcode::kEmptyTuple},
      {"TUPLE", PickleOpcode::kTuple},
      {"EMPTY_LIST", PickleOpcode::kEmptyList},
      {"LIST", PickleOpcode::kList},
      {"APPEND", PickleOpcode::kAppend},
      {"APPENDS", PickleOpcode::kAppends},
      {"EMPTY_DICT", PickleOpcode::kEmptyDict},
      {"DICT", PickleOpcode::kDict},
      {"SETITEM", PickleOpcode::kSetItem},
      {"SETITEMS", PickleOpcode::kSetItems},
      {"GLOBAL", PickleOpcode::kGlobal},
      {"REDUCE", PickleOpcode::kReduce},
      {"BUILD", PickleOpcode::kBuild},
      {"INST", PickleOpcode::kInst},
      {"OBJ", PickleOpcode::kObj},
      {"PERSID", PickleOpcode::kPersId},
      {"BINPERSID", PickleOpcode::kBinPersId},
      {"PROTO", PickleOpcode::kProto},
      {"NEWOBJ", PickleOpcode::kNewObj},
      {"EXT1", PickleOpcode::kExt1},
      {"EXT2", PickleOpcode::kExt2},
      {"EXT4", PickleOpcode::kExt4},
      {"TUPLE1", PickleOpcode::kTuple1},
      {"TUPLE2", PickleOpcode::kTuple2},
      {"TUPLE3", PickleOpcode::kTuple3},
      {"NEWTRUE", PickleOpcode::kNewTrue},
      {"NEWFALSE", PickleOpcode::kNewFalse},
      {"LONG1", PickleOpcode::kLong1},
      {"LONG4", PickleOpcode::kLong4},
      {"BINBYTES", PickleOpcode::kBinBytes},
      {"SHORT_BINBYTES", PickleOpcode::kShortBinBytes},
      {"SHORT_BINUNICODE", PickleOpcode::kShortBinUnicode},
      {"BINUNICODE8", PickleOpcode::kBinUnicode8},
      {"BINBYTES8", PickleOpcode::kBinBytes8},
      {"EMPTY_SET", PickleOpcode::kEmptySet},
      {"ADDITEMS", PickleOpcode::kAddItems},
      {"FROZENSET", PickleOpcode::kFrozenSet},
      {"NEWOBJ_EX", PickleOpcode::kNewObjEx},
      {"STACK_GLOBAL", PickleOpcode::kStackGlobal},
      {"MEMOIZE", PickleOpcode::kMemoize},
      {"FRAME", PickleOpcode::kFrame},
      {"BYTEARRAY8", PickleOpcode::kByteArray8},
      {"NEXT_BUFFER", PickleOpcode::kNextBuffer},
      {"READONLY_BUFFER", PickleOpcode::kReadonlyBuffer},
  };
  const auto& python = referenceCases()["opcodes"];
  EXPECT_EQ(python.size(), ours.size());
  for (const auto& [name, byte] : python.items()) {
    auto it = ours.find(name);
    ASSERT_NE(it, ours.end()) << "no PickleOpcode for " << name;
    EXPECT_EQ(static_cast<uint8_t>(pickleByte(it->second)), byte.get<int>()) << name;
    EXPECT_EQ(toPickleOpcode(byte.get<uint8_t>()), it->second) << name;
  }
}

TEST(Unpickler, ReadsWhatPythonPicklesWithEveryProtocol) {
  const auto& cases = referenceCases()["cases"];
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>() + " protocol " +
                 std::to_string(c["protocol"].get<int>()));
    RecordingStorages storages;
    c10::IValue value = unpickle(fromHex(c["pickle"]), storages);
    expectSameCanon(canon(value), c["canon"]);
    EXPECT_TRUE(storages.refs.empty());
  }
}

TEST(Unpickler, MalformedPicklesAreWeightsErrorsNamingTheCause) {
  for (const auto& c : referenceCases()["errors"]) {
    const std::string name = c["name"];
    const std::string bytes = fromHex(c["pickle"]);
    RecordingStorages storages;
    try {
      Unpickler(bytes.data(), bytes.size(), storages).parse();
      ADD_FAILURE() << name << ": no exception";
    } catch (const WeightsError& e) {
      EXPECT_NE(std::string(e.what()).find(c["message"].get<std::string>()), std::string::npos)
          << name << ": " << e.what();
    }
  }
  // The name given for the pickle is the one in messages.
  RecordingStorages storages;
  const std::string cut = "\x80\x02]";
  try {
    Unpickler(cut.data(), cut.size(), storages, "stream.pkl").parse();
    ADD_FAILURE() << "no exception";
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("stream.pkl is truncated"), std::string::npos) << e.what();
  }
}

// Inputs the torchfile fuzzer found (fuzz/corpus/torchfile/regression-*): a list appended to
// itself (its objects were never freed; converting it recursed to the depth limit) and a dict
// keyed by None (c10::Dict cannot hash None: an uncaught std::runtime_error). Both are
// WeightsErrors now, and nothing leaks.
TEST(Unpickler, FuzzRegressionsAreWeightsErrors) {
  const std::string dir = std::string(FIXRES_SOURCE_DIR) + "/fuzz/corpus/torchfile/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"regression-self-holding-list-leak.pkl", "data.pkl nests too deeply"},
      {"regression-none-dict-key-abort.pkl", "unsupported dict key of type None in data.pkl"}};
  for (const auto& [file, message] : cases) {
    const std::vector<uint8_t> bytes = fixres::testing::readBytes(dir + file);
    ASSERT_FALSE(bytes.empty()) << file;
    RecordingStorages storages;
    try {
      Unpickler(reinterpret_cast<const char*>(bytes.data()), bytes.size(), storages).parse();
      ADD_FAILURE() << file << ": no exception";
    } catch (const WeightsError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << file << ": " << e.what();
    }
  }
}

TEST(Unpickler, ObjectsOfUnknownClassesBecomeNoneAndAreNamed) {
  const auto& c = referenceCases()["ignored"];
  RecordingStorages storages;
  std::vector<std::string> ignored;
  c10::IValue value = unpickle(fromHex(c["pickle"]), storages, &ignored);
  EXPECT_EQ(canon(value), c["canon"].get<std::string>());
  EXPECT_EQ(ignored, c["classes"].get<std::vector<std::string>>());
}

TEST(Unpickler, HandsTheStoragesOfTorchSaveToTheResolver) {
  const auto& c = referenceCases()["tensors"];
  RecordingStorages storages;
  c10::IValue value = unpickle(fromHex(c["pickle"]), storages);
  ASSERT_TRUE(value.isGenericDict());
  auto dict = value.toGenericDict();

  // Every storage Python's persistent_load saw, with the same fields.
  std::map<std::string, StorageRef> byKey;
  for (const auto& ref : storages.refs) byKey[ref.key] = ref;
  ASSERT_EQ(byKey.size(), c["storages"].size());
  for (const auto& s : c["storages"]) {
    const StorageRef& ref = byKey.at(s[0].get<std::string>());
    EXPECT_EQ(storageClassName(ref.dtype), s[1].get<std::string>()) << ref.key;
    EXPECT_EQ(ref.numel, s[2].get<int64_t>()) << ref.key;
    EXPECT_EQ(ref.location, s[3].get<std::string>()) << ref.key;
  }
  // Every tensor with Python's view of its storage ("" when Python cannot tell an empty one).
  ASSERT_EQ(dict.size(), c["tensors"].size());
  for (const auto& [name, t] : c["tensors"].items()) {
    SCOPED_TRACE(name);
    at::Tensor tensor = dict.at(name).toTensor();
    EXPECT_TRUE(tensor.is_meta());
    EXPECT_EQ(tensor.sizes().vec(), t[2].get<std::vector<int64_t>>());
    EXPECT_EQ(tensor.strides().vec(), t[3].get<std::vector<int64_t>>());
    bool found = false;
    for (size_t k = 0; k < storages.refs.size(); ++k) {
      if (storages.views[k].sizes != tensor.sizes().vec() ||
          storages.views[k].strides != tensor.strides().vec() ||
          storages.views[k].offset != t[1].get<int64_t>())
        continue;
      if (!t[0].get<std::string>().empty() && storages.refs[k].key != t[0].get<std::string>())
        continue;
      found = true;
    }
    EXPECT_TRUE(found) << "no resolver call for this view";
  }
}

}  // namespace
}  // namespace fixres::models
