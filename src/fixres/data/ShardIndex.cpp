// The shard index (shards.json): written as one JSON object of per-shard columns, read back event
// by event (a SAX reader, no JSON tree), and used only when it matches the folder's tar files.
#include "fixres/data/ShardIndex.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/image/Codec.h"

namespace fixres::data {

namespace fs = std::filesystem;

std::string lowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool isShardWorkFolderName(const std::string& name) {
  const std::string prefix = kShardWorkPrefix;
  return name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0;
}

// Version 2: members in every ImageFolder image format (version 1 listed .jpg .jpeg .png only, so
// an index of that version is read as not matching, and the shards scanned again). Which
// extensions are images is the codec registry's: the index records its stamp (image_listing), and
// one made with other extensions is scanned again, with no version to bump by hand.
constexpr int64_t kShardIndexVersion = 2;

bool isImageExtension(const std::string& ext) {
  return image::isImageFolderExtension(ext);
}

// One shard's members as columns (keys, labels, offsets, sizes, extensions): an ImageNet-sized
// index parses into a fraction of the memory one JSON object per member takes.
std::string shardIndexToJson(const ShardIndex& index) {
  nlohmann::json j;
  j["format"] = "fixres-shards";
  j["version"] = kShardIndexVersion;
  j["image_listing"] = image::imageFolderListingStamp();
  j["classes"] = index.classes;
  j["shards"] = nlohmann::json::array();
  for (const auto& s : index.shards) {
    nlohmann::json keys = nlohmann::json::array(), labels = nlohmann::json::array(),
                   offsets = nlohmann::json::array(), sizes = nlohmann::json::array(),
                   extensions = nlohmann::json::array();
    for (const auto& m : s.members) {
      keys.push_back(m.key);
      labels.push_back(m.label);
      offsets.push_back(m.offset);
      sizes.push_back(m.size);
      extensions.push_back(m.extension);
    }
    j["shards"].push_back({{"name", s.name},
                           {"bytes", s.bytes},
                           {"keys", std::move(keys)},
                           {"labels", std::move(labels)},
                           {"offsets", std::move(offsets)},
                           {"sizes", std::move(sizes)},
                           {"extensions", std::move(extensions)}});
  }
  return jsonText(j) + "\n";
}

namespace {

// Reads shards.json event by event (no JSON tree: an ImageNet index of 1.28 M members would
// take several hundred MB as one), straight into ShardIndex, one shard's columns at a time.
class ShardIndexSax {
 public:
  ShardIndex index;
  std::string format;
  int64_t version = -1;
  int64_t listing = -1;  // image_listing: the stamp of the extensions the index was made with
  std::string error;     // the first problem

  bool null() { return other("null"); }
  bool boolean(bool) { return other("a boolean"); }
  bool number_float(double, const std::string&) { return other("a fraction"); }
  bool binary(nlohmann::json::binary_t&) { return other("binary data"); }
  bool number_integer(int64_t v) {
    if (v >= 0) return number_unsigned(static_cast<uint64_t>(v));
    if (top() == Kind::kColumn && column_ == "labels") return push(labels_, v);
    if (top() == Kind::kSkip) return true;
    return fail("a negative number in '" + keyOf() + "'");
  }
  bool number_unsigned(uint64_t v) {
    switch (top()) {
      case Kind::kRoot:
        if (keys_.back() == "version") version = static_cast<int64_t>(std::min<uint64_t>(v, 1000));
        if (keys_.back() == "image_listing")
          listing = static_cast<int64_t>(std::min<uint64_t>(v, UINT32_MAX + uint64_t(1)));
        return true;
      case Kind::kShard:
        if (keys_.back() == "bytes") index.shards.back().bytes = v;
        return true;
      case Kind::kColumn:
        if (column_ == "labels")
          return push(labels_, static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)));
        if (column_ == "offsets") return push(offsets_, v);
        if (column_ == "sizes") return push(sizes_, v);
        return fail("a number in '" + column_ + "'");
      case Kind::kSkip:
        return true;
      default:
        return fail("a number in '" + keyOf() + "'");
    }
  }
  bool string(std::string& v) {
    switch (top()) {
      case Kind::kRoot:
        if (keys_.back() == "format") format = v;
        return true;
      case Kind::kClasses:
        index.classes.push_back(std::move(v));
        return true;
      case Kind::kShard:
        if (keys_.back() == "name") index.shards.back().name = std::move(v);
        return true;
      case Kind::kColumn:
        if (column_ == "keys") return push(names_, std::move(v));
        if (column_ == "extensions") return push(extensions_, std::move(v));
        return fail("a string in '" + column_ + "'");
      case Kind::kSkip:
        return true;
      default:
        return fail("a string in '" + keyOf() + "'");
    }
  }
  bool start_object(std::size_t) {
    if (stack_.empty()) return enter(Kind::kRoot);
    if (top() == Kind::kShards) {
      index.shards.emplace_back();
      names_.clear(), labels_.clear(), offsets_.clear(), sizes_.clear(), extensions_.clear();
      return enter(Kind::kShard);
    }
    if (top() == Kind::kSkip || top() == Kind::kRoot || top() == Kind::kShard)
      return enter(Kind::kSkip);
    return fail("an object in '" + keyOf() + "'");
  }
  bool key(std::string& k) {
    keys_.back() = k;
    return true;
  }
  bool end_object() {
    if (top() == Kind::kShard && !finishShard()) return false;
    return leave();
  }
  bool start_array(std::size_t) {
    if (stack_.empty()) return fail("not an object");
    if (top() == Kind::kRoot && keys_.back() == "classes") return enter(Kind::kClasses);
    if (top() == Kind::kRoot && keys_.back() == "shards") return enter(Kind::kShards);
    if (top() == Kind::kShard) {
      column_ = keys_.back();
      for (const char* c : {"keys", "labels", "offsets", "sizes", "extensions"}) {
        if (column_ == c) return enter(Kind::kColumn);
      }
    }
    if (top() == Kind::kColumn || top() == Kind::kClasses || top() == Kind::kShards)
      return fail("an array in '" + keyOf() + "'");
    return enter(Kind::kSkip);
  }
  bool end_array() { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    return fail(e.what());
  }

 private:
  enum class Kind { kRoot, kClasses, kShards, kShard, kColumn, kSkip };
  Kind top() const { return stack_.empty() ? Kind::kSkip : stack_.back(); }
  std::string keyOf() const {
    for (size_t i = keys_.size(); i-- > 0;) {
      if (!keys_[i].empty()) return keys_[i];
    }
    return "";
  }
  bool enter(Kind k) {
    stack_.push_back(k);
    keys_.emplace_back();
    return true;
  }
  bool leave() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool other(const char* what) {
    if (top() == Kind::kSkip) return true;
    return fail(std::string(what) + " in '" + keyOf() + "'");
  }
  template <typename T, typename V>
  bool push(std::vector<T>& column, V&& v) {
    column.push_back(std::forward<V>(v));
    return true;
  }
  bool fail(const std::string& message) {
    if (error.empty()) error = message;
    return false;
  }
  bool finishShard() {
    ShardInfo& info = index.shards.back();
    const size_t n = names_.size();
    if (labels_.size() != n || offsets_.size() != n || sizes_.size() != n ||
        extensions_.size() != n)
      return fail("the columns of " + info.name + " differ in length");
    info.members.resize(n);
    for (size_t k = 0; k < n; ++k) {
      ShardMember& m = info.members[k];
      m.key = std::move(names_[k]);
      m.label = labels_[k];
      m.offset = offsets_[k];
      m.size = sizes_[k];
      m.extension = std::move(extensions_[k]);
      if (m.offset > info.bytes || m.size > info.bytes - m.offset)
        return fail("member " + m.key + " lies outside " + info.name);
    }
    return true;
  }

  std::vector<Kind> stack_;
  std::vector<std::string> keys_;  // the current key of each open object or array
  std::string column_;
  std::vector<std::string> names_, extensions_;
  std::vector<int64_t> labels_;
  std::vector<uint64_t> offsets_, sizes_;
};

ShardIndex parseShardIndex(const char* begin, const char* end, const std::string& what) {
  ShardIndexSax sax;
  const bool ok = nlohmann::json::sax_parse(begin, end, &sax);
  FIXRES_CHECK(ok && sax.error.empty(), DataError, what, ": malformed shard index: ",
               sax.error.empty() ? std::string("unexpected content") : sax.error);
  FIXRES_CHECK(sax.format == "fixres-shards", DataError, what,
               ": not a fixres shard index (format)");
  FIXRES_CHECK(sax.version == kShardIndexVersion, DataError, what, ": unsupported index version ",
               sax.version);
  FIXRES_CHECK(sax.listing == int64_t(image::imageFolderListingStamp()), DataError, what,
               ": made when other image extensions were read (image_listing ", sax.listing, ")");
  return std::move(sax.index);
}

}  // namespace

ShardIndex shardIndexFromJson(const std::string& text, const std::string& what) {
  return parseShardIndex(text.data(), text.data() + text.size(), what);
}

bool readMatchingShardIndex(const std::string& dir, const std::vector<std::string>& tars,
                            ShardIndex* index, std::string* why) {
  const std::string path = (fs::path(dir) / kShardIndexName).string();
  if (!fileExists(path)) return false;
  try {
    const std::string text = readRegularFile<DataError>(path, kShardIndexMaxBytes, "shard index");
    *index = parseShardIndex(text.data(), text.data() + text.size(), path);
  } catch (const DataError& e) {
    *why = oneLine(e.what());
    return false;
  }
  std::vector<std::string> listed;
  for (const auto& s : index->shards) listed.push_back(s.name);
  if (listed != tars) {
    *why = path + " lists " + std::to_string(listed.size()) + " shard(s), the folder holds " +
           std::to_string(tars.size());
    return false;
  }
  for (const auto& s : index->shards) {
    std::error_code ec;
    const auto bytes = fs::file_size(fs::path(dir) / s.name, ec);
    if (ec || bytes != s.bytes) {
      *why = s.name + " is not the size " + path + " gives";
      return false;
    }
  }
  return true;
}

}  // namespace fixres::data
