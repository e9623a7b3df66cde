// The shard writer: a dataset's encoded samples, shuffled, into ustar shards and their index.
#include "fixres/data/ShardWriter.h"

#include <ATen/CPUGeneratorImpl.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/FolderLock.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/TarCodec.h"

namespace fixres::data {

namespace fs = std::filesystem;

namespace {

// The file name of the k-th shard.
std::string shardFileName(size_t k) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "shard-%06zu.tar", k);
  return buf;
}

// The sample's key: its path relative to the dataset's source, without extension, dots replaced.
std::string keyFor(const Dataset& dataset, size_t i) {
  std::string name = dataset.name(i);
  std::string root = dataset.source();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (name.size() > root.size() + 1 && name.compare(0, root.size(), root) == 0 &&
      name[root.size()] == '/')
    name = name.substr(root.size() + 1);
  const size_t slash = name.rfind('/');
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
    name = name.substr(0, dot);
  for (char& c : name) {
    if (c == '.' || c == ':') c = '_';
  }
  while (!name.empty() && name.front() == '/') name.erase(name.begin());
  return name;
}

// The image's extension: the file name's when it is a decoded format, else from the bytes.
std::string extensionFor(const std::string& name, const RawSample& s) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    const std::string ext = lowerCase(name.substr(dot + 1));
    if (isImageExtension(ext)) return ext;
  }
  if (s.size() >= 8 && std::memcmp(s.data(), "\x89PNG", 4) == 0) return "png";
  return "jpg";
}

// Writes one shard file atomically, member by member.
class ShardFile {
 public:
  explicit ShardFile(const std::string& path) : file_(path) {
    FIXRES_CHECK(file_.ok(), OutputError, "cannot create ", path, ": ", file_.reason());
  }
  // Appends member `name`; returns the offset of its data.
  uint64_t add(const std::string& name, const void* data, uint64_t size) {
    const auto header = ustarHeader(name, size);
    write(header.data(), kTarBlock);
    const uint64_t at = bytes_;
    write(data, size);
    static const char kZeros[kTarBlock] = {};
    const uint64_t pad = (kTarBlock - size % kTarBlock) % kTarBlock;
    write(kZeros, pad);
    return at;
  }
  uint64_t commit() {
    static const char kZeros[2 * kTarBlock] = {};
    write(kZeros, sizeof(kZeros));
    FIXRES_CHECK(file_.commit(), OutputError, "cannot write ", file_.path(), ": ", file_.reason());
    return bytes_;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  void write(const void* data, uint64_t size) {
    file_.write(data, size);
    FIXRES_CHECK(file_.ok(), OutputError, "cannot write ", file_.path(), ": ", file_.reason());
    bytes_ += size;
  }
  AtomicFile file_;
  uint64_t bytes_ = 0;
};

// Removes from `outDir` the working folders of `fixres shard` runs that were killed: a
// `.partial-XXXXXX` folder (not a link) holding the lock file of its writer (FolderLock), which no
// process holds any more. UsageError naming the folder while a live writer holds it; a folder
// without the lock file, or on a file system without locks, is left (and named by checkOutDir).
void removeStaleWorkFolders(const std::string& outDir) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (fs::directory_iterator it(outDir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (isShardWorkFolderName(it->path().filename().string()) &&
        fs::is_directory(fs::symlink_status(it->path(), ec2)) &&
        fs::is_regular_file(fs::symlink_status(it->path() / ".lock", ec2)))
      candidates.push_back(it->path());
  }
  for (const fs::path& dir : candidates) {
    std::string holder;
    bool busy = false;
    try {
      const auto lock = FolderLock::tryLock(dir.string(), &holder);
      busy = !lock;
      if (lock && lock->held()) {
        log::warn("shard: removing ", dir.string(),
                  ", left by a fixres shard that was interrupted");
        fs::remove_all(dir, ec);
      }
    } catch (const Error&) {
      continue;  // cannot tell: left in place
    }
    FIXRES_CHECK(!busy, UsageError, "--out ", outDir,
                 ": another fixres shard (pid and host: ", holder.empty() ? "unknown" : holder,
                 ") is writing into ", dir.string());
  }
}

// Checks that `outDir` is missing or an empty folder once stale working folders are removed
// (UsageError naming its first entries otherwise); true when it exists.
bool checkOutDir(const std::string& outDir) {
  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(outDir, ec));
  if (existed) {
    FIXRES_CHECK(fs::is_directory(outDir, ec), UsageError, "--out ", outDir,
                 " exists and is not a folder");
    removeStaleWorkFolders(outDir);
    std::string why;
    const auto names = folderEntries(outDir, &why);
    FIXRES_CHECK(why.empty(), UsageError, "--out ", outDir, ": cannot list folder: ", why);
    FIXRES_CHECK(names.empty(), UsageError, "--out ", outDir, " is not empty: it holds ",
                 entriesText(names), " (shards go to a new or empty folder)");
  }
  return existed;
}

// Sample i's key, added to *keys: keyFor's, or else (empty, taken, or too long for a ustar name
// with `ext`) the index zero-padded to `digits`, with '_' appended until it is new.
std::string uniqueKey(const Dataset& dataset, size_t i, const std::string& ext, int digits,
                      std::unordered_set<std::string>* keys) {
  std::string key = keyFor(dataset, i);
  std::string prefix, base;
  if (key.empty() || keys->count(key) || !splitUstarName(key + "." + ext, &prefix, &base)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%0*zu", digits, i);
    key = buf;
    while (keys->count(key)) key += "_";
  }
  keys->insert(key);
  return key;
}

// Moves the shards, then the index, from `tmp` up into `outDir`; OutputError when one cannot move.
void moveUp(const std::string& tmp, const std::string& outDir, const ShardIndex& index) {
  std::vector<std::string> names;
  for (const auto& sh : index.shards) names.push_back(sh.name);
  names.push_back(kShardIndexName);
  for (const auto& name : names) {
    const std::string from = (fs::path(tmp) / name).string();
    const std::string to = (fs::path(outDir) / name).string();
    FIXRES_CHECK(::rename(from.c_str(), to.c_str()) == 0, OutputError, "cannot move ", from, " to ",
                 to, ": ", std::strerror(errno));
  }
}

}  // namespace

ShardWriteResult writeShards(const Dataset& dataset, const ShardWriteOptions& o) {
  FIXRES_CHECK(o.shardBytes > 0, UsageError, "shard size must be positive");
  const bool existed = checkOutDir(o.outDir);
  std::error_code ec;
  const size_t n = dataset.size();
  FIXRES_CHECK(n > 0, DataError, dataset.source(), ": no sample to shard");
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  const torch::Tensor perm =
      torch::randperm(static_cast<int64_t>(n), gen, torch::TensorOptions().dtype(torch::kLong));
  const int64_t* order = perm.data_ptr<int64_t>();

  // Everything is written into a hidden folder inside OUT, then moved up, the index last: until
  // then OUT holds a sub-folder, so it never reads as a (partial) shard folder.
  if (!existed) makeDirectories(o.outDir);
  std::string tmp = (fs::path(o.outDir) / (std::string(kShardWorkPrefix) + "XXXXXX")).string();
  if (::mkdtemp(tmp.data()) == nullptr) {
    const std::string why = std::strerror(errno);
    if (!existed) fs::remove(o.outDir, ec);
    FIXRES_FAIL(OutputError, "cannot create a folder in ", o.outDir, ": ", why);
  }
  const auto cleanUp = [&]() {
    fs::remove_all(tmp, ec);
    if (!existed) fs::remove(o.outDir, ec);  // only when still empty
  };
  ShardWriteResult result;
  ShardIndex index;
  index.classes = dataset.classes();
  std::optional<FolderLock> workLock;  // marks tmp as a live writer's (removeStaleWorkFolders)
  try {
    workLock.emplace(tmp);
    std::unordered_set<std::string> keys;
    const int digits = std::max<int>(6, static_cast<int>(std::to_string(n - 1).size()));
    std::unique_ptr<ShardFile> shard;
    auto finish = [&]() {
      if (!shard) return;
      index.shards.back().bytes = shard->commit();
      shard.reset();
    };
    for (size_t k = 0; k < n; ++k) {
      if (stopSignal() != 0) {
        shard.reset();
        cleanUp();
        result.stopSignal = receivedStopSignal();
        return result;
      }
      const size_t i = static_cast<size_t>(order[k]);
      const RawSample s = dataset.fetch(i);
      FIXRES_CHECK(!s.isDecoded && s.bytes, DataError, dataset.name(i),
                   ": only encoded images (JPEG, PNG files) can be written to tar shards");
      const std::string ext = extensionFor(s.name, s);
      const std::string key = uniqueKey(dataset, i, ext, digits, &keys);
      if (!shard) {
        index.shards.push_back({shardFileName(index.shards.size()), 0, {}});
        shard = std::make_unique<ShardFile>((fs::path(tmp) / index.shards.back().name).string());
      }
      ShardMember m;
      m.key = key;
      m.label = dataset.label(i);
      m.extension = ext;
      m.size = s.size();
      m.offset = shard->add(key + "." + ext, s.data(), s.size());
      const std::string cls = std::to_string(m.label);
      shard->add(key + ".cls", cls.data(), cls.size());
      index.shards.back().members.push_back(std::move(m));
      if (shard->bytes() + 2 * kTarBlock >= o.shardBytes) finish();
    }
    finish();
    writeFileAtomic((fs::path(tmp) / kShardIndexName).string(), shardIndexToJson(index));
    moveUp(tmp, o.outDir, index);
    fs::remove_all(tmp, ec);  // its lock file
  } catch (...) {
    // Shards already moved up are ours too: OUT was empty or new.
    for (const auto& sh : index.shards) fs::remove(fs::path(o.outDir) / sh.name, ec);
    cleanUp();
    throw;
  }
  result.samples = n;
  result.shards = index.shards.size();
  return result;
}

}  // namespace fixres::data
