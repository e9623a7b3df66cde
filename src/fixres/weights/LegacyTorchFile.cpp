// Pre-1.6 torch.save streams: the pickles are read from a prefix of the file (grown until they
// fit), the storage section is indexed once, and each storage's data is read when a tensor
// needs it (StorageTensors).
#include "fixres/weights/LegacyTorchFile.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/weights/StorageTensors.h"
#include "fixres/weights/Unpickler.h"

namespace fixres::models {
namespace {

constexpr int64_t kLegacyProtocolVersion = 1001;
// 0x1950a86a20f9469cfc6c as pickle's LONG1 stores it: 10 bytes, little-endian.
constexpr unsigned char kMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
// The first read of the pickles; grown 8x while they run past it.
constexpr size_t kFirstPrefix = size_t{1} << 16;

// The length of the magic number's pickle at the start of `head`, or 0 when it is not there:
// PROTO 2..5, FRAME (protocols 4, 5), LONG1 of 10 bytes, STOP.
size_t magicPickleLength(const std::string& head) {
  auto byteAt = [&](size_t k) {
    return k < head.size() ? static_cast<unsigned char>(head[k]) : -1;
  };
  if (byteAt(0) != 0x80 || byteAt(1) < 2 || byteAt(1) > 5) return 0;
  size_t pos = 2;
  if (byteAt(pos) == 0x95) pos += 9;  // FRAME and its 8-byte length
  if (byteAt(pos) != 0x8a || byteAt(pos + 1) != static_cast<int>(sizeof(kMagic))) return 0;
  pos += 2;
  for (size_t k = 0; k < sizeof(kMagic); ++k)
    if (byteAt(pos + k) != kMagic[k]) return 0;
  pos += sizeof(kMagic);
  return byteAt(pos) == '.' ? pos + 1 : 0;
}

// For the pickles that hold no tensors (protocol version, sys_info, the key list).
class NoStorages final : public StorageResolver {
 public:
  at::Tensor tensor(const StorageRef& storage, int64_t, c10::IntArrayRef,
                    c10::IntArrayRef) override {
    FIXRES_FAIL(WeightsError, "unexpected tensor");
  }
};

// Collects the storages the object's pickle names; its tensors are shape-only.
class StorageNames final : public StorageResolver {
 public:
  explicit StorageNames(std::string source) : source_(std::move(source)) {}
  void declare(const StorageRef& storage) override { declareStorage(names, storage, source_); }
  at::Tensor tensor(const StorageRef& storage, int64_t, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides) override {
    return at::empty_strided(sizes, strides,
                             at::TensorOptions().dtype(storage.dtype).device(at::kMeta));
  }
  std::unordered_map<std::string, StorageRef> names;

 private:
  std::string source_;
};

}  // namespace

struct LegacyTorchFile::Impl {
  explicit Impl(ByteSource source) : bytes(std::move(source)), storages(bytes.name(), fetcher()) {}

  // Where a storage's elements are in the file.
  struct Record {
    StorageRef storage;
    uint64_t offset = 0;
  };

  StorageTensors::Fetch fetcher() {
    return [this](const StorageRef& st) {
      auto it = records.find(st.key);
      FIXRES_CHECK(it != records.end() && it->second.storage.numel == st.numel &&
                       it->second.storage.dtype == st.dtype,
                   WeightsError, bytes.name(), ": storage ", st.key, " has no data");
      at::Tensor flat = at::empty({st.numel}, at::TensorOptions().dtype(st.dtype));
      bytes.read(it->second.offset, flat.data_ptr(), static_cast<size_t>(flat.nbytes()),
                 "storage " + st.key);
      return flat;
    };
  }

  // Parses one pickle of `prefix` at `pos` (advanced past it); `what` names it in messages.
  c10::IValue parse(size_t& pos, StorageResolver& resolver, const std::string& what,
                    std::vector<std::string>* ignored = nullptr) {
    Unpickler unpickler(prefix.data() + pos, prefix.size() - pos, resolver, what);
    try {
      c10::IValue value = unpickler.parse();
      pos += unpickler.position();
      if (ignored) *ignored = unpickler.ignoredObjects();
      return value;
    } catch (const WeightsError& e) {
      ranOut = unpickler.ranOut();
      FIXRES_FAIL(WeightsError, namedBy(bytes.name(), e.what()));
    }
  }

  // The pickles, from a prefix of the file; the object's storages and the key list.
  std::vector<std::string> parsePickles(size_t magicEnd, StorageNames& names) {
    size_t pos = magicEnd;
    NoStorages none;
    c10::IValue version = parse(pos, none, "the protocol version");
    FIXRES_CHECK(version.isInt() && version.toInt() == kLegacyProtocolVersion, WeightsError,
                 bytes.name(), ": unsupported legacy torch.save protocol version ",
                 version.isInt() ? std::to_string(version.toInt()) : version.tagKind());
    c10::IValue sysInfo = parse(pos, none, "the system info");
    FIXRES_CHECK(sysInfo.isGenericDict(), WeightsError, bytes.name(),
                 ": malformed system info (not a dict)");
    auto info = sysInfo.toGenericDict();
    auto little = info.find(c10::IValue(std::string("little_endian")));
    FIXRES_CHECK(little == info.end() || !little->value().isBool() || little->value().toBool(),
                 WeightsError, bytes.name(),
                 " was saved on a big-endian machine; only little-endian files are supported");
    dataBegin = pos;
    parse(pos, names, "the data pickle");
    dataEnd = pos;
    c10::IValue keyList = parse(pos, none, "the storage key list");
    FIXRES_CHECK(keyList.isList(), WeightsError, bytes.name(),
                 ": malformed storage key list (not a list)");
    std::vector<std::string> keys;
    for (const c10::IValue& k : keyList.toListRef()) {
      FIXRES_CHECK(k.isString(), WeightsError, bytes.name(), ": malformed storage key list (a ",
                   k.tagKind(), ")");
      keys.push_back(k.toStringRef());
    }
    storageSection = pos;
    return keys;
  }

  void open() {
    const std::string head = bytes.readUpTo(0, 64);
    const size_t magicEnd = magicPickleLength(head);
    FIXRES_CHECK(magicEnd > 0, WeightsError, bytes.name(),
                 " is a pickle but not a torch.save file (no torch.save magic number)");
    std::vector<std::string> keys;
    StorageNames names(bytes.name());
    for (size_t length = std::min<uint64_t>(bytes.size(), kFirstPrefix);;
         length = std::min<uint64_t>(bytes.size(), length * 8)) {
      prefix = bytes.readUpTo(0, length);
      ranOut = false;
      names.names.clear();
      try {
        keys = parsePickles(magicEnd, names);
        break;
      } catch (const WeightsError&) {
        if (!ranOut || length == bytes.size()) throw;
      }
    }
    prefix.resize(dataEnd);  // what read() needs again
    indexStorages(keys, names.names);
  }

  // Walks the storage section: each key's count must be its pickle's numel and its data in the
  // file.
  void indexStorages(const std::vector<std::string>& keys,
                     const std::unordered_map<std::string, StorageRef>& names) {
    uint64_t pos = storageSection;
    for (const std::string& key : keys) {
      auto it = names.find(key);
      FIXRES_CHECK(it != names.end(), WeightsError, bytes.name(), ": storage ", key,
                   " is listed but not named by the data pickle (file damaged?)");
      unsigned char count[8];
      bytes.read(pos, count, 8, "element count of storage " + key);
      uint64_t numel = 0;
      for (int k = 0; k < 8; ++k) numel |= uint64_t{count[k]} << (8 * k);
      FIXRES_CHECK(numel == static_cast<uint64_t>(it->second.numel), WeightsError, bytes.name(),
                   ": storage ", key, " holds ", numel, " elements, its tensors ", it->second.numel,
                   " (file damaged?)");
      const auto size = static_cast<uint64_t>(storageBytes(it->second, bytes.name()));
      FIXRES_CHECK(pos + 8 <= bytes.size() && size <= bytes.size() - pos - 8, WeightsError,
                   bytes.name(), " is truncated (storage ", key, ": ", size, " bytes at offset ",
                   pos + 8, ", the file has ", bytes.size(), ")");
      FIXRES_CHECK(records.emplace(key, Record{it->second, pos + 8}).second, WeightsError,
                   bytes.name(), ": storage ", key, " is listed twice (file damaged?)");
      pos += 8 + size;
    }
    for (const auto& [key, storage] : names)
      FIXRES_CHECK(records.count(key), WeightsError, bytes.name(), ": storage ", key,
                   " has no data (file damaged?)");
  }

  ByteSource bytes;
  StorageTensors storages;
  std::string prefix;  // the file up to the end of the data pickle
  size_t dataBegin = 0, dataEnd = 0, storageSection = 0;
  bool ranOut = false;  // the last pickle failed for want of bytes past the prefix
  std::unordered_map<std::string, Record> records;
  std::vector<std::string> ignored;
};

LegacyTorchFile::LegacyTorchFile(const std::string& path)
    : impl_(std::make_unique<Impl>(ByteSource(path))) {
  impl_->open();
}

LegacyTorchFile::LegacyTorchFile(const void* data, size_t size, const std::string& name)
    : impl_(std::make_unique<Impl>(ByteSource(data, size, name))) {
  impl_->open();
}

LegacyTorchFile::~LegacyTorchFile() = default;

const std::string& LegacyTorchFile::path() const {
  return impl_->bytes.name();
}

c10::IValue LegacyTorchFile::read(bool lazy) {
  impl_->storages.begin(lazy);
  size_t pos = impl_->dataBegin;
  c10::IValue value = impl_->parse(pos, impl_->storages, "the data pickle", &impl_->ignored);
  if (!impl_->ignored.empty()) {
    std::string names;
    for (const auto& n : impl_->ignored) names += (names.empty() ? "" : ", ") + n;
    log::debug(path(), ": ignored Python objects of types ", names);
  }
  return value;
}

void LegacyTorchFile::copyInto(const at::Tensor& src, at::Tensor& dst) {
  impl_->storages.copyInto(src, dst);
}

const std::vector<std::string>& LegacyTorchFile::ignoredObjects() const {
  return impl_->ignored;
}

}  // namespace fixres::models
