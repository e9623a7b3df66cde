// The shard-folder dataset: a folder's tar shards as one Dataset, read at the indexed offsets.
#include "fixres/data/TarShards.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>

#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/TarScanner.h"

namespace fixres::data {

namespace fs = std::filesystem;

namespace {

// Whether the folder `dir` holds an image (any ImageFolder extension) at any depth; folders that
// cannot be listed (lost+found for a user) hold none.
bool holdsImages(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it.depth() > 64) it.disable_recursion_pending();
    const std::string ext = lowerCase(it->path().extension().string());
    if (ext.size() > 1 && isImageExtension(ext.substr(1))) return true;
  }
  return false;
}

}  // namespace

bool isShardFolder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  bool tar = false;
  std::vector<fs::path> folders;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      if (!isShardWorkFolderName(it->path().filename().string())) folders.push_back(it->path());
    } else if (lowerCase(it->path().extension().string()) == ".tar") {
      tar = true;
    }
  }
  if (!tar || ec) return false;
  // Sub-folders without images (lost+found, a folder of notes) do not make it an image folder.
  for (const fs::path& f : folders) {
    if (holdsImages(f)) return false;
  }
  return true;
}

namespace {

class TarShardDataset : public Dataset {
 public:
  TarShardDataset(std::string dir, ShardIndex index) : dir_(std::move(dir)) {
    classes_ = std::move(index.classes);
    size_t total = 0;
    for (const auto& s : index.shards) total += s.members.size();
    samples_.reserve(total);
    for (auto& s : index.shards) {
      const size_t shard = paths_.size();
      paths_.push_back((fs::path(dir_) / s.name).string());
      bytes_.push_back(s.bytes);
      sizes_.push_back(s.members.size());
      for (auto& m : s.members) {
        if (m.problem.empty() && (m.label < 0 || m.label >= static_cast<int64_t>(classes_.size())))
          m.problem = "label " + std::to_string(m.label) + " outside the " +
                      std::to_string(classes_.size()) + " classes";
        int32_t problem = -1;
        if (!m.problem.empty()) {
          problem = static_cast<int32_t>(problems_.size());
          problems_.push_back(std::move(m.problem));
        }
        samples_.push_back(
            {m.offset, m.size, m.label, static_cast<uint32_t>(shard), problem, std::move(m.key)});
      }
      std::vector<ShardMember>().swap(s.members);  // one shard's members at a time in memory
    }
    files_.resize(paths_.size());
  }
  size_t size() const override { return samples_.size(); }
  int64_t label(size_t i) const override {
    const int64_t l = samples_.at(i).label;
    return l >= 0 ? l : 0;  // unreadable samples never reach a batch
  }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(size_t i) const override {
    const Sample& s = samples_.at(i);
    return paths_[s.shard] + ":" + s.key;
  }
  RawSample fetch(size_t i) const override {
    const Sample& s = samples_.at(i);
    RawSample out;
    out.name = name(i);
    FIXRES_CHECK(s.problem < 0, DataError, out.name, ": ",
                 problems_[static_cast<size_t>(std::max(s.problem, 0))]);
    auto bytes = std::make_shared<std::vector<uint8_t>>(s.size);
    FIXRES_CHECK(file(s.shard).readExact(s.offset, bytes->data(), bytes->size()), DataError,
                 out.name, ": cannot read ", s.size, " bytes at ", s.offset, ": ",
                 errno ? std::strerror(errno) : "the shard is shorter than its index says");
    out.bytes = std::move(bytes);
    return out;
  }
  std::string source() const override { return dir_; }
  std::vector<size_t> shardSizes() const override { return sizes_; }

 private:
  struct Sample {  // about 64 bytes, plus the key when it is longer than 15 characters
    uint64_t offset, size;
    int64_t label;
    uint32_t shard;
    int32_t problem;  // index in problems_, -1 when the sample reads
    std::string key;
  };
  // The shard's file, opened on first use; errno cleared, so that a failed read tells an error
  // from a shard shorter than its index.
  const ByteSource& file(size_t shard) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!files_[shard])
      files_[shard] =
          std::make_unique<ByteSource>(openShardFd(paths_[shard]), bytes_[shard], paths_[shard]);
    errno = 0;
    return *files_[shard];
  }
  std::string dir_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<uint64_t> bytes_;  // file size per shard, as indexed or scanned
  std::vector<size_t> sizes_;
  std::vector<Sample> samples_;
  std::vector<std::string> problems_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<ByteSource>> files_;
};

// The `*.tar` files of a shard folder, sorted; DataError when there is none.
std::vector<std::string> tarFilesOf(const std::string& dir) {
  std::error_code ec;
  FIXRES_CHECK(fs::is_directory(dir, ec), DataError, "shard folder ", dir,
               " does not exist or is not a folder");
  std::vector<std::string> tars;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (lowerCase(it->path().extension().string()) == ".tar")
      tars.push_back(it->path().filename().string());
  }
  FIXRES_CHECK(!ec, DataError, dir, ": cannot list folder: ", ec.message());
  FIXRES_CHECK(!tars.empty(), DataError, dir, ": no .tar shard");
  std::sort(tars.begin(), tars.end());
  return tars;
}

}  // namespace

std::vector<std::string> indexedShardClasses(const std::string& dir) {
  ShardIndex index;
  std::string why;
  if (!readMatchingShardIndex(dir, tarFilesOf(dir), &index, &why)) return {};
  return index.classes;
}

std::shared_ptr<Dataset> openTarShards(const std::string& dir, bool labelled) {
  const std::vector<std::string> tars = tarFilesOf(dir);
  ShardIndex index;
  std::string why;
  if (!readMatchingShardIndex(dir, tars, &index, &why)) {
    if (!why.empty()) log::warn("data: ", dir, ": index not used (", why, "); scanning the shards");
    index = ShardIndex();
    int64_t maxLabel = -1;
    for (const auto& t : tars) {
      index.shards.push_back(scanShard((fs::path(dir) / t).string(), labelled));
      for (const auto& m : index.shards.back().members) {
        if (m.problem.empty()) maxLabel = std::max(maxLabel, m.label);
      }
    }
    // The scanner leaves no label above kMaxShardLabel: at most a million class names.
    FIXRES_CHECK(maxLabel <= kMaxShardLabel, InternalError, dir, ": label ", maxLabel, " above ",
                 kMaxShardLabel);
    for (int64_t c = 0; labelled && c <= std::max<int64_t>(maxLabel, 0); ++c)
      index.classes.push_back(std::to_string(c));
  }
  if (!labelled) {
    index.classes = {""};
    for (auto& s : index.shards) {
      for (auto& m : s.members) m.label = 0;
    }
  }
  size_t total = 0;
  for (const auto& s : index.shards) total += s.members.size();
  FIXRES_CHECK(total > 0, DataError, dir, ": the shards hold no sample");
  return std::make_shared<TarShardDataset>(dir, std::move(index));
}

}  // namespace fixres::data
