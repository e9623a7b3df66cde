// The folder index: its binary form, where it lives, and when it is still current.
#include "fixres/data/FileIndex.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Crc32c.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/common/Sha256.h"
#include "fixres/image/Codec.h"

namespace fixres::data {

namespace fs = std::filesystem;

namespace {

// "FXIDX" + format version; a file of another version is stale, not an error.
constexpr char kIndexMagic[8] = {'F', 'X', 'I', 'D', 'X', '\0', '\0', '\0'};
// Version 3: the listing stamp of the codec registry (image/Codec.h) in the high 32 bits, so an
// index made when other extensions were images is stale, with no version to bump by hand.
// (Version 1 left out .bmp .ppm .pgm .tif .tiff .webp; version 2 listed them without the stamp.)
uint64_t indexVersion() {
  return (uint64_t(image::imageFolderListingStamp()) << 32) | 3;
}
constexpr const char* kIndexName = ".fixres-index";
constexpr uint64_t kIndexMaxCount = uint64_t(1) << 32;  // sanity bound on any count in the file

int64_t stampNs(const timespec& t) {
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Little-endian fixed-width fields and length-prefixed strings.
class IndexWriter {
 public:
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class IndexReader {
 public:
  IndexReader(const char* data, size_t size) : p_(data), end_(data + size) {}
  bool u64(uint64_t& v) {
    if (end_ - p_ < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p_[i])) << (8 * i);
    p_ += 8;
    return true;
  }
  bool i64(int64_t& v) {
    uint64_t u;
    if (!u64(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  bool count(uint64_t& n) { return u64(n) && n < kIndexMaxCount; }
  bool str(std::string& s) {
    uint64_t n;
    if (!u64(n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    s.assign(p_, n);
    p_ += n;
    return true;
  }
  bool atEnd() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

std::string absoluteRootOf(const std::string& root) {
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(fs::absolute(root, ec), ec);
  return ec ? fs::absolute(root).lexically_normal().string() : abs.string();
}

constexpr size_t kIndexHeaderBytes = 32;  // magic, version, payload size, CRC

// Copies the `n` bytes at `offset` of `fd` to `dst`; false when they cannot all be read.
bool preadAll(int fd, char* dst, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

// The index file at `path` into `out`; false (never an exception) when there is none, and false
// with the reason in *refusal when it is not a regular file (refused without blocking), is larger
// than kFolderIndexMaxBytes or cannot be read. The payload is read only when the header announces
// exactly the file's size: any other file costs one 32-byte read (decodeFolderIndex says why).
bool readIndexFile(const std::string& path, std::string& out, std::string* refusal) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  uint64_t size = 0;
  const int fd = openRegularFile(path, kFolderIndexMaxBytes, "file index", &size, refusal);
  if (fd < 0) return false;
  out.assign(static_cast<size_t>(std::min<uint64_t>(size, kIndexHeaderBytes)), '\0');
  errno = 0;
  bool ok = preadAll(fd, out.data(), out.size(), 0);
  uint64_t payload = 0;
  for (int i = 0; ok && out.size() == kIndexHeaderBytes && i < 8; ++i)
    payload |= uint64_t(static_cast<unsigned char>(out[16 + i])) << (8 * i);
  if (ok && out.size() == kIndexHeaderBytes && payload == size - kIndexHeaderBytes) {
    out.resize(static_cast<size_t>(size));
    ok = preadAll(fd, out.data() + kIndexHeaderBytes, payload, kIndexHeaderBytes);
  }
  const int err = errno;
  ::close(fd);
  if (!ok)
    *refusal = "cannot read file index " + path + ": " +
               (err != 0 ? std::strerror(err) : "it shrank while being read");
  return ok;
}

// Why `rel` is not a plain path below a folder: "" when it is relative, without empty, "." or
// ".." components and without NUL characters.
std::string relativePathProblem(std::string_view rel) {
  if (rel.empty()) return "is empty";
  if (rel.find('\0') != std::string_view::npos) return "holds a NUL character";
  if (rel.front() == '/') return "is absolute";
  for (size_t b = 0; b <= rel.size();) {
    const size_t e = std::min(rel.find('/', b), rel.size());
    const std::string_view part = rel.substr(b, e - b);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a '" + std::string(part) + "' component";
    b = e + 1;
  }
  return "";
}

std::string_view firstComponent(std::string_view rel) {
  return rel.substr(0, rel.find('/'));
}

std::string_view parentOf(std::string_view rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
}

// Why `index` no longer describes the tree at `root` with `classes`, or "" when it does.
std::string indexStaleReason(const std::string& root, const std::vector<std::string>& classes,
                             const FolderIndex& index) {
  if (index.classes != classes) return "the class folders changed";
  const std::string prefix = (fs::path(root) / "x").string();
  const std::string base = prefix.substr(0, prefix.size() - 1);
  for (const FolderStamp& f : index.folders) {
    const auto now = stampFolder(base + f.path, f.path);
    if (!now) return "folder " + f.path + " is gone";
    if (!(*now == f)) return "folder " + f.path + " changed";
  }
  return "";
}

}  // namespace

std::optional<FolderStamp> stampFolder(const std::string& fullPath, const std::string& relPath) {
  struct stat st {};
  if (::stat(fullPath.c_str(), &st) != 0) return std::nullopt;
  FolderStamp s;
  s.path = relPath;
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.mtimeNs = stampNs(st.st_mtim);
  s.ctimeNs = stampNs(st.st_ctim);
  return s;
}

std::string indexPathNextTo(const std::string& root) {
  return (fs::path(root) / kIndexName).string();
}

std::string indexPathInCache(const std::string& root, const std::string& cacheDir) {
  if (cacheDir.empty()) return "";
  return (fs::path(cacheDir) / (sha256Hex(absoluteRootOf(root)).substr(0, 32) + ".index")).string();
}

std::string encodeFolderIndex(const FolderIndex& index) {
  IndexWriter w;
  w.str(index.absoluteRoot);
  w.u64(index.classes.size());
  for (const auto& c : index.classes) w.str(c);
  w.u64(index.folders.size());
  for (const auto& f : index.folders) {
    w.str(f.path);
    w.u64(f.inode);
    w.i64(f.mtimeNs);
    w.i64(f.ctimeNs);
  }
  w.u64(index.files.size());
  for (const auto& f : index.files) {
    w.str(f.path);
    w.i64(f.label);
    w.u64(f.size);
    w.i64(f.mtimeNs);
  }
  for (const LeftOutFiles* l : {&index.undecoded, &index.notRegular}) {
    w.i64(l->count);
    w.str(l->example);
  }
  const std::string& payload = w.bytes();
  IndexWriter head;
  head.bytes().append(kIndexMagic, sizeof(kIndexMagic));
  head.u64(indexVersion());
  head.u64(payload.size());
  head.u64(crc32c(payload));
  return head.bytes() + payload;
}

std::string folderIndexEntryProblem(const FolderIndex& index) {
  auto entry = [](const char* kind, std::string_view path, const std::string& problem) {
    return std::string(kind) + " entry '" + std::string(path) + "' " + problem;
  };
  std::unordered_set<std::string_view> classes, folders;
  for (const std::string& c : index.classes) {
    std::string problem = relativePathProblem(c);
    if (problem.empty() && c.find('/') != std::string::npos) problem = "is not a single name";
    if (!problem.empty()) return entry("class", c, problem);
    classes.insert(c);
  }
  auto inClassFolder = [&](const char* kind, std::string_view path) {
    const std::string problem = relativePathProblem(path);
    if (!problem.empty()) return entry(kind, path, problem);
    if (!classes.count(firstComponent(path))) return entry(kind, path, "is in no class folder");
    return std::string();
  };
  for (const FolderStamp& f : index.folders) {
    const std::string problem = inClassFolder("folder", f.path);
    if (!problem.empty()) return problem;
    folders.insert(f.path);
  }
  for (const IndexedFile& f : index.files) {
    const std::string problem = relativePathProblem(f.path);
    if (!problem.empty()) return entry("file", f.path, problem);
    if (f.label < 0 || static_cast<size_t>(f.label) >= index.classes.size())
      return entry("file", f.path, "has a label outside the classes");
    const std::string& cls = index.classes[static_cast<size_t>(f.label)];
    if (firstComponent(f.path) != cls)
      return entry("file", f.path, "is not in the folder of its class '" + cls + "'");
    if (!folders.count(parentOf(f.path)))
      return entry("file", f.path, "is in a folder the index does not stamp");
  }
  for (const LeftOutFiles* l : {&index.undecoded, &index.notRegular}) {
    const std::string problem = l->count > 0 ? inClassFolder("left-out file", l->example) : "";
    if (!problem.empty()) return problem;
  }
  return "";
}

namespace {

// decodeFolderIndex without the entry check.
std::optional<FolderIndex> decodeUnchecked(const std::string& bytes, std::string* why) {
  auto fail = [why](const char* reason) -> std::optional<FolderIndex> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kIndexMagic, sizeof(kIndexMagic)) != 0)
    return fail("not a fixres index");
  IndexReader head(bytes.data() + 8, 24);
  uint64_t version = 0, size = 0, crc = 0;
  head.u64(version);
  head.u64(size);
  head.u64(crc);
  if (version != indexVersion()) return fail("another format version or image listing");
  if (size != bytes.size() - 32) return fail("truncated");
  if (crc != crc32c(bytes.data() + 32, size)) return fail("checksum mismatch");
  IndexReader r(bytes.data() + 32, size);
  FolderIndex index;
  uint64_t n = 0;
  bool ok = r.str(index.absoluteRoot) && r.count(n);
  for (uint64_t i = 0; ok && i < n; ++i) ok = r.str(index.classes.emplace_back());
  ok = ok && r.count(n);
  for (uint64_t i = 0; ok && i < n; ++i) {
    FolderStamp& f = index.folders.emplace_back();
    ok = r.str(f.path) && r.u64(f.inode) && r.i64(f.mtimeNs) && r.i64(f.ctimeNs);
  }
  ok = ok && r.count(n);
  const auto classCount = static_cast<int64_t>(index.classes.size());
  for (uint64_t i = 0; ok && i < n; ++i) {
    IndexedFile& f = index.files.emplace_back();
    ok = r.str(f.path) && r.i64(f.label) && r.u64(f.size) && r.i64(f.mtimeNs) && f.label >= 0 &&
         f.label < classCount;
  }
  for (LeftOutFiles* l : {&index.undecoded, &index.notRegular}) {
    ok = ok && r.i64(l->count) && r.str(l->example) && l->count >= 0;
  }
  if (!ok || !r.atEnd()) return fail("malformed contents");
  return index;
}

std::string unsafeIndexReason(const FolderIndex& index) {
  const std::string problem = folderIndexEntryProblem(index);
  return problem.empty() ? "" : problem + " (it could lead outside the dataset folder)";
}

}  // namespace

std::optional<FolderIndex> decodeFolderIndex(const std::string& bytes, std::string* why) {
  auto index = decodeUnchecked(bytes, why);
  if (!index) return index;
  const std::string unsafe = unsafeIndexReason(*index);
  if (unsafe.empty()) return index;
  if (why) *why = unsafe;
  return std::nullopt;
}

std::optional<FolderIndex> loadFolderIndex(const std::string& root,
                                           const std::vector<std::string>& classes,
                                           const FileIndexOptions& options,
                                           FileIndexReport& report) {
  const std::string next = indexPathNextTo(root);
  const std::string cached = indexPathInCache(root, options.cacheDir);
  std::string why = "no index";
  for (const std::string& path : {next, cached}) {
    std::string bytes, refusal;
    if (path.empty()) continue;
    if (!readIndexFile(path, bytes, &refusal)) {
      if (refusal.empty()) continue;  // none there
      why = refusal;
      log::warn("data: ", root, ": index not used: ", refusal, "; scanning the folder");
      continue;
    }
    std::string reason;
    auto index = decodeUnchecked(bytes, &reason);
    const std::string unsafe = index ? unsafeIndexReason(*index) : "";
    if (!unsafe.empty()) {
      why = path + ": " + unsafe;
      log::warn("data: ", root, ": index ", why, "; not used, scanning the folder");
      continue;
    }
    // An index in the shared cache folder must be the one of this root (not a hash collision
    // or a copied file); next to the tree, the folder stamps alone decide, so a tree mounted
    // at another path keeps its index.
    if (index && path == cached && index->absoluteRoot != absoluteRootOf(root))
      reason = "made for " + index->absoluteRoot;
    else if (index)
      reason = indexStaleReason(root, classes, *index);
    if (reason.empty()) {
      report.usedIndex = true;
      report.path = path;
      log::debug("data: ", root, ": listing read from ", path, " (", index->files.size(),
                 " files)");
      return index;
    }
    why = path + ": " + reason;
    log::debug("data: ", root, ": index ", why, "; scanning the folder");
  }
  report.why = why;
  return std::nullopt;
}

void saveFolderIndex(const std::string& root, FolderIndex index, const FileIndexOptions& options,
                     int64_t scanStartNs, FileIndexReport& report) {
  const auto racyNs = static_cast<int64_t>(options.racySeconds * 1e9);
  for (const FolderStamp& f : index.folders) {
    if (f.mtimeNs >= scanStartNs - racyNs) {
      report.why = "folder " + f.path + " was modified during or just before the scan";
      log::debug("data: ", root, ": no index written: ", report.why);
      return;
    }
  }
  index.absoluteRoot = absoluteRootOf(root);
  const std::string bytes = encodeFolderIndex(index);
  if (bytes.size() > kFolderIndexMaxBytes) {
    report.why = "the index would take " + std::to_string(bytes.size()) + " bytes, more than " +
                 std::to_string(kFolderIndexMaxBytes);
    log::debug("data: ", root, ": no index written: ", report.why);
    return;
  }
  std::string failures;
  for (const std::string& path :
       {indexPathNextTo(root), indexPathInCache(root, options.cacheDir)}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (path != indexPathNextTo(root)) fs::create_directories(fs::path(path).parent_path(), ec);
    AtomicFile out(path);
    out.write(bytes.data(), bytes.size());
    if (out.commit()) {
      report.saved = true;
      report.path = path;
      log::debug("data: ", root, ": listing of ", index.files.size(), " files saved to ", path);
      return;
    }
    failures += (failures.empty() ? "" : "; ") + path + ": " + out.reason();
  }
  report.why = "cannot write an index (" + failures + ")";
  log::debug("data: ", root, ": ", report.why);
}

}  // namespace fixres::data
