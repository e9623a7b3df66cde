// Tar shards: the ustar writer, the header scanner, the index and the shard-folder dataset.
#include "fixres/data/TarShards.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <unordered_set>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"

namespace fixres::data {

namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 512;

std::string lowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool isImageExtension(const std::string& ext) {
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

std::string shardFileName(size_t k) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "shard-%06zu.tar", k);
  return buf;
}

// ---- ustar header --------------------------------------------------------------------------

// Writes `value` as `width - 1` octal digits and a NUL into field[0..width).
void putOctal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0; value >>= 3) digits[i] = static_cast<char>('0' + (value & 7));
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

// Splits `name` into ustar's prefix (<= 155) and name (<= 100) at a '/'; false when impossible.
bool splitUstarName(const std::string& name, std::string* prefix, std::string* base) {
  if (name.size() <= 100) {
    *prefix = "";
    *base = name;
    return true;
  }
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    if (slash <= 155 && name.size() - slash - 1 <= 100 && slash + 1 < name.size()) {
      *prefix = name.substr(0, slash);
      *base = name.substr(slash + 1);
      return true;
    }
  }
  return false;
}

// A regular-file header (mode 0644, owner 0, mtime 0: shards are byte-identical for one seed).
std::array<char, kBlock> ustarHeader(const std::string& name, uint64_t size) {
  std::array<char, kBlock> h{};
  std::string prefix, base;
  if (!splitUstarName(name, &prefix, &base))
    FIXRES_FAIL(InternalError, "tar member name does not fit a ustar header: ", name);
  FIXRES_CHECK(size < (1ull << 33), DataError, name, ": ", size,
               " bytes is more than a ustar member holds (8 GiB)");
  std::memcpy(h.data(), base.data(), base.size());
  putOctal(h.data() + 100, 8, 0644);
  putOctal(h.data() + 108, 8, 0);
  putOctal(h.data() + 116, 8, 0);
  putOctal(h.data() + 124, 12, size);
  putOctal(h.data() + 136, 12, 0);
  h[156] = '0';
  std::memcpy(h.data() + 257, "ustar", 6);  // with its NUL
  std::memcpy(h.data() + 263, "00", 2);
  std::memcpy(h.data() + 345, prefix.data(), prefix.size());
  std::memset(h.data() + 148, ' ', 8);
  uint64_t sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  putOctal(h.data() + 148, 7, sum);  // six digits, NUL, and the space already there
  return h;
}

// A numeric header field: octal text (NUL/space terminated) or GNU base-256 (high bit set).
bool parseNumber(const char* field, size_t width, uint64_t* out) {
  const auto* u = reinterpret_cast<const unsigned char*>(field);
  if (u[0] & 0x80) {
    uint64_t v = u[0] & 0x7f;
    for (size_t i = 1; i < width; ++i) {
      if (v >> 55) return false;
      v = (v << 8) | u[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t v = 0;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 60) return false;
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return false;
  }
  *out = v;
  return any;
}

std::string fieldString(const char* field, size_t width) {
  return std::string(field, strnlen(field, width));
}

// ---- reading -------------------------------------------------------------------------------

// Opens the shard at `path` for reading (O_NONBLOCK: a FIFO in its place cannot block the open).
// DataError "<path>: cannot open: <reason>".
int openShardFd(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FIXRES_CHECK(fd >= 0, DataError, path, ": cannot open: ", std::strerror(errno));
  return fd;
}

// The shard at `path` to scan; DataError when it cannot be opened or is not a regular file.
ByteSource openShardFile(const std::string& path) {
  const int fd = openShardFd(path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    FIXRES_FAIL(DataError, path, ": not a regular file");
  }
  return ByteSource(fd, static_cast<uint64_t>(st.st_size), path);
}

// The pax extended header records "LEN key=value\n" that matter here: path and size.
void parsePax(const std::string& text, std::string* path, uint64_t* size, bool* hasSize) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t space = text.find(' ', pos);
    if (space == std::string::npos) return;
    const size_t len = std::strtoull(text.c_str() + pos, nullptr, 10);
    if (len == 0 || pos + len > text.size()) return;
    const std::string record = text.substr(space + 1, pos + len - space - 2);  // without '\n'
    const size_t eq = record.find('=');
    if (eq != std::string::npos) {
      const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
      if (key == "path") *path = value;
      if (key == "size") {
        *size = std::strtoull(value.c_str(), nullptr, 10);
        *hasSize = true;
      }
    }
    pos += len;
  }
}

// A label from .cls text: decimal digits, surrounding whitespace allowed.
bool parseLabel(const std::string& text, int64_t* out) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  if (b == e || e - b > 12) return false;
  int64_t v = 0;
  for (size_t i = b; i < e; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

ShardInfo scanShard(const std::string& path, bool labelled) {
  const ByteSource file = openShardFile(path);
  ShardInfo info;
  info.name = fs::path(path).filename().string();
  info.bytes = file.size();
  struct Partial {
    ShardMember member;
    bool hasImage = false, hasCls = false;
    std::string clsProblem;
  };
  std::vector<Partial> samples;
  std::map<std::string, size_t> byKey;
  std::string paxPath;
  uint64_t paxSize = 0;
  bool paxHasSize = false;
  std::string longName;
  int64_t ignored = 0;
  uint64_t offset = 0;
  std::array<char, kBlock> h{};
  while (true) {
    if (offset + kBlock > file.size()) {
      // Archives end with two zero blocks; tolerate a missing end marker at a block boundary.
      FIXRES_CHECK(offset == file.size(), DataError, path, ": truncated tar header at byte ",
                   offset);
      break;
    }
    FIXRES_CHECK(file.readExact(offset, h.data(), kBlock), DataError, path,
                 ": cannot read at byte ", offset, ": ", std::strerror(errno));
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == 0; })) break;
    uint64_t stored = 0, sum = 0;
    FIXRES_CHECK(parseNumber(h.data() + 148, 8, &stored), DataError, path,
                 ": not a tar file (bad header checksum field at byte ", offset, ")");
    for (size_t i = 0; i < kBlock; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    FIXRES_CHECK(sum == stored, DataError, path, ": corrupt tar header at byte ", offset,
                 " (checksum ", stored, ", computed ", sum, ")");
    uint64_t size = 0;
    FIXRES_CHECK(parseNumber(h.data() + 124, 12, &size), DataError, path,
                 ": corrupt tar header at byte ", offset, " (size field)");
    const char type = h[156];
    const uint64_t dataOffset = offset + kBlock;
    FIXRES_CHECK(size <= file.size() && dataOffset <= file.size() - size, DataError, path,
                 ": truncated: the member at byte ", offset, " needs ", size,
                 " bytes, the file ends at ", file.size());
    const uint64_t next = dataOffset + (size + kBlock - 1) / kBlock * kBlock;
    if (type == 'x' || type == 'L') {
      FIXRES_CHECK(size <= (1u << 20), DataError, path, ": extended header of ", size,
                   " bytes at byte ", offset);
      std::string text(size, '\0');
      FIXRES_CHECK(file.readExact(dataOffset, text.data(), size), DataError, path,
                   ": cannot read at byte ", dataOffset);
      if (type == 'x') {
        parsePax(text, &paxPath, &paxSize, &paxHasSize);
      } else {
        longName = std::string(text.c_str());
      }
      offset = next;
      continue;
    }
    std::string name;
    if (!paxPath.empty()) {
      name = paxPath;
    } else if (!longName.empty()) {
      name = longName;
    } else {
      const std::string prefix = fieldString(h.data() + 345, 155);
      const std::string base = fieldString(h.data(), 100);
      const bool ustar = std::memcmp(h.data() + 257, "ustar", 5) == 0;
      name = ustar && !prefix.empty() ? prefix + "/" + base : base;
    }
    uint64_t memberSize = size, memberNext = next;
    if (paxHasSize) {
      memberSize = paxSize;
      FIXRES_CHECK(memberSize <= file.size() && dataOffset <= file.size() - memberSize, DataError,
                   path, ": truncated: the member at byte ", offset, " needs ", memberSize,
                   " bytes");
      memberNext = dataOffset + (memberSize + kBlock - 1) / kBlock * kBlock;
    }
    paxPath.clear();
    longName.clear();
    paxHasSize = false;
    offset = memberNext;
    if (type != '0' && type != '\0' && type != '7') continue;  // folders, links, global headers
    // WebDataset: key = everything before the first '.' of the last path component.
    const size_t slash = name.rfind('/');
    const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
    if (dot == std::string::npos) {
      ++ignored;
      continue;
    }
    const std::string key = name.substr(0, dot);
    const std::string ext = lowerCase(name.substr(dot + 1));
    const bool image = isImageExtension(ext);
    if (!image && ext != "cls") {
      ++ignored;
      continue;
    }
    auto [it, fresh] = byKey.emplace(key, samples.size());
    if (fresh) {
      samples.emplace_back();
      samples.back().member.key = key;
    }
    Partial& p = samples[it->second];
    if (image) {
      if (p.hasImage) {
        p.member.problem = "two images (." + p.member.extension + " and ." + ext + ")";
        continue;
      }
      p.hasImage = true;
      p.member.extension = ext;
      p.member.offset = dataOffset;
      p.member.size = memberSize;
    } else {
      p.hasCls = true;
      std::string text(std::min<uint64_t>(memberSize, 64), '\0');
      FIXRES_CHECK(file.readExact(dataOffset, text.data(), text.size()), DataError, path,
                   ": cannot read at byte ", dataOffset);
      int64_t label = -1;
      if (memberSize <= 64 && parseLabel(text, &label)) {
        p.member.label = label;
      } else {
        p.clsProblem = "bad label (.cls holds '" + text.substr(0, 20) + "', not a class index)";
      }
    }
  }
  if (ignored > 0) {
    log::debug("data: ", path, ": ignored ", ignored,
               " member(s) that are neither images (.jpg .jpeg .png) nor .cls");
  }
  info.members.reserve(samples.size());
  for (auto& p : samples) {
    ShardMember& m = p.member;
    if (m.problem.empty() && !p.hasImage) m.problem = "no image (.jpg, .jpeg or .png member)";
    if (labelled && m.problem.empty() && !p.hasCls) m.problem = "no label (.cls member)";
    if (labelled && m.problem.empty() && !p.clsProblem.empty()) m.problem = p.clsProblem;
    if (!m.problem.empty()) m.label = -1;
    info.members.push_back(std::move(m));
  }
  return info;
}

// ---- index -----------------------------------------------------------------------------------

// One shard's members as columns (keys, labels, offsets, sizes, extensions): an ImageNet-sized
// index parses into a fraction of the memory one JSON object per member takes.
std::string shardIndexToJson(const ShardIndex& index) {
  nlohmann::json j;
  j["format"] = "fixres-shards";
  j["version"] = 1;
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
  return j.dump() + "\n";
}

namespace {

// Reads shards.json event by event (no JSON tree: an ImageNet index of 1.28 M members would
// take several hundred MB as one), straight into ShardIndex, one shard's columns at a time.
class ShardIndexSax {
 public:
  ShardIndex index;
  std::string format;
  int64_t version = -1;
  std::string error;  // the first problem

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
  FIXRES_CHECK(sax.version == 1, DataError, what, ": unsupported index version ", sax.version);
  return std::move(sax.index);
}

}  // namespace

ShardIndex shardIndexFromJson(const std::string& text, const std::string& what) {
  return parseShardIndex(text.data(), text.data() + text.size(), what);
}

// ---- writing ---------------------------------------------------------------------------------
namespace {

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
    write(header.data(), kBlock);
    const uint64_t at = bytes_;
    write(data, size);
    static const char kZeros[kBlock] = {};
    const uint64_t pad = (kBlock - size % kBlock) % kBlock;
    write(kZeros, pad);
    return at;
  }
  uint64_t commit() {
    static const char kZeros[2 * kBlock] = {};
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

}  // namespace

ShardWriteResult writeShards(const Dataset& dataset, const ShardWriteOptions& o) {
  FIXRES_CHECK(o.shardBytes > 0, UsageError, "shard size must be positive");
  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(o.outDir, ec));
  if (existed) {
    FIXRES_CHECK(fs::is_directory(o.outDir, ec), UsageError, "--out ", o.outDir,
                 " exists and is not a folder");
    FIXRES_CHECK(fs::is_empty(o.outDir, ec) && !ec, UsageError, "--out ", o.outDir,
                 " is not empty (shards go to a new or empty folder)");
  }
  const size_t n = dataset.size();
  FIXRES_CHECK(n > 0, DataError, dataset.source(), ": no sample to shard");
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  const torch::Tensor perm =
      torch::randperm(static_cast<int64_t>(n), gen, torch::TensorOptions().dtype(torch::kLong));
  const int64_t* order = perm.data_ptr<int64_t>();

  // Everything is written into a hidden folder inside OUT, then moved up, the index last: until
  // then OUT holds a sub-folder, so it never reads as a (partial) shard folder.
  if (!existed) makeDirectories(o.outDir);
  std::string tmp = (fs::path(o.outDir) / ".partial-XXXXXX").string();
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
  try {
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
      std::string key = keyFor(dataset, i);
      std::string prefix, base;
      if (key.empty() || keys.count(key) || !splitUstarName(key + "." + ext, &prefix, &base)) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%0*zu", digits, i);
        key = buf;
        while (keys.count(key)) key += "_";
      }
      keys.insert(key);
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
      if (shard->bytes() + 2 * kBlock >= o.shardBytes) finish();
    }
    finish();
    writeFileAtomic((fs::path(tmp) / kShardIndexName).string(), shardIndexToJson(index));
    std::vector<std::string> names;
    for (const auto& sh : index.shards) names.push_back(sh.name);
    names.push_back(kShardIndexName);
    for (const auto& name : names) {
      const std::string from = (fs::path(tmp) / name).string();
      const std::string to = (fs::path(o.outDir) / name).string();
      FIXRES_CHECK(::rename(from.c_str(), to.c_str()) == 0, OutputError, "cannot move ", from,
                   " to ", to, ": ", std::strerror(errno));
    }
    fs::remove(tmp, ec);
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

// ---- reading a shard folder -----------------------------------------------------------------

bool isShardFolder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  bool tar = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) return false;
    if (lowerCase(it->path().extension().string()) == ".tar") tar = true;
  }
  return tar && !ec;
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

// The index of `dir` when it matches its tar files (names and sizes); why not in *why.
bool readMatchingIndex(const std::string& dir, const std::vector<std::string>& tars,
                       ShardIndex* index, std::string* why) {
  const std::string path = (fs::path(dir) / kShardIndexName).string();
  if (!fileExists(path)) return false;
  try {
    const std::vector<char> text = readFile(path);
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

}  // namespace

namespace {

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
  if (!readMatchingIndex(dir, tarFilesOf(dir), &index, &why)) return {};
  return index.classes;
}

std::shared_ptr<Dataset> openTarShards(const std::string& dir, bool labelled) {
  const std::vector<std::string> tars = tarFilesOf(dir);
  ShardIndex index;
  std::string why;
  if (!readMatchingIndex(dir, tars, &index, &why)) {
    if (!why.empty()) log::warn("data: ", dir, ": index not used (", why, "); scanning the shards");
    index = ShardIndex();
    int64_t maxLabel = -1;
    for (const auto& t : tars) {
      index.shards.push_back(scanShard((fs::path(dir) / t).string(), labelled));
      for (const auto& m : index.shards.back().members) maxLabel = std::max(maxLabel, m.label);
    }
    for (int64_t c = 0; c <= std::max<int64_t>(maxLabel, 0); ++c)
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
