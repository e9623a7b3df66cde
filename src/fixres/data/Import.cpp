// IDX -> PNG image folder. The output folder is only ever created, filled when empty, or, when
// an earlier import made it (its marker file says so), has its own entries replaced: nothing
// fixres did not write is deleted or overwritten.
#include "fixres/data/Import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <system_error>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"
#include "fixres/image/Encode.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = ".fixres-import";
constexpr const char* kEntries[] = {"train", "holdout", "val"};
constexpr uintmax_t kMaxMarkerBytes = 4096;

std::string findIdx(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    std::string p = dir + "/" + stem + suffix;
    if (fileExists(p)) return p;
  }
  FIXRES_FAIL(DataError, "missing ", dir, "/", stem,
              "[.gz]: install the data set with 'apt-get install dataset-fashion-mnist' or give "
              "--source with the IDX files");
}

// False when a stop signal came (the caller removes what was written).
bool exportSplit(const Dataset& ds, int64_t begin, int64_t end, const std::string& dir,
                 const std::vector<std::string>& classNames) {
  for (const auto& c : classNames) makeDirectories(dir + "/" + c);
  for (int64_t i = begin; i < end; ++i) {
    if (stopSignal() != 0) return false;
    auto sample = ds.fetch(static_cast<size_t>(i));
    const auto& im = sample.decoded;
    // IDX images are grayscale; the dataset returns them as RGB with equal channels.
    std::vector<uint8_t> gray(static_cast<size_t>(im.width) * im.height);
    for (size_t p = 0; p < gray.size(); ++p) gray[p] = im.pixels[p * 3];
    char name[32];
    std::snprintf(name, sizeof(name), "%06lld.png", static_cast<long long>(i));
    image::writePng(dir + "/" +
                        classNames.at(static_cast<size_t>(ds.label(static_cast<size_t>(i)))) + "/" +
                        name,
                    im.width, im.height, 1, gray.data());
  }
  return true;
}

// ---- the output folder -----------------------------------------------------------------------

enum class OutState {
  kAbsent,    // nothing there: the import appears there by one rename
  kEmpty,     // an empty folder: the import's entries are moved into it
  kImported,  // a folder holding our marker: its entries may be replaced
};

struct OutFolder {
  fs::path path;  // absolute, symlinks resolved when it exists
  OutState state = OutState::kAbsent;
  std::string stamp;  // kImported: the marker's contents
};

// The marker names its writer, then the counts of a complete import ("fixres import\ntrain 10\n
// holdout 2\nval 6\n") or "replacing" while a replacement moves entries.
constexpr const char* kMarkerHead = "fixres import\n";
constexpr const char* kReplacing = "fixres import\nreplacing\n";

std::string stampOf(int64_t train, int64_t holdout, int64_t val) {
  return std::string(kMarkerHead) + "train " + std::to_string(train) + "\nholdout " +
         std::to_string(holdout) + "\nval " + std::to_string(val) + "\n";
}

// Whether `text` is a marker fixres writes: a stamp, "replacing", or either as earlier versions
// wrote them ("10 2 6\n", "replacing\n"). An earlier stamp is returned in today's form.
bool parseMarker(const std::string& text, std::string& stamp) {
  if (text == kReplacing || text == "replacing\n") {
    stamp = kReplacing;
    return true;
  }
  long long n[3];
  const bool head = text.rfind(kMarkerHead, 0) == 0;
  const std::string body = head ? text.substr(std::strlen(kMarkerHead)) : text;
  const char* form = head ? "train %lld holdout %lld val %lld" : "%lld %lld %lld";
  if (std::sscanf(body.c_str(), form, &n[0], &n[1], &n[2]) != 3 || n[0] < 0 || n[1] < 0 || n[2] < 0)
    return false;
  stamp = stampOf(n[0], n[1], n[2]);
  // Only the exact text: no signs, spaces or anything else around the numbers.
  const std::string legacy = detail::concat(n[0], " ", n[1], " ", n[2], "\n");
  return head ? text == stamp : text == legacy;
}

// The marker's text when `dir` holds a marker fixres wrote (a regular file, not a link, of a
// marker's exact form: parseMarker), else nothing.
std::optional<std::string> readMarker(const fs::path& dir) {
  std::error_code ec;
  const fs::path marker = dir / kMarker;
  if (!fs::is_regular_file(fs::symlink_status(marker, ec))) return std::nullopt;
  const uintmax_t size = fs::file_size(marker, ec);
  if (ec || size > kMaxMarkerBytes) return std::nullopt;
  const auto bytes = readFile(marker.string());
  std::string stamp;
  if (!parseMarker(std::string(bytes.begin(), bytes.end()), stamp)) return std::nullopt;
  return stamp;
}

// The names in `dir`, sorted.
std::vector<std::string> sortedNames(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The first entry (relative to `dir`, sorted) that replacing an earlier import would remove but
// import did not make: inside train/, holdout/ and val/, anything but class folders of
// <digits>.png images (and the file index fixres keeps in an image folder), or a split that is
// not a folder; "" when there is none. Other entries beside the splits are kept by a replacement.
std::string firstForeignEntry(const fs::path& dir) {
  const auto type = [](const fs::path& p) {
    std::error_code ec;
    return fs::symlink_status(p, ec).type();
  };
  const auto isImage = [](const std::string& n) {
    return n.size() > 4 && n.compare(n.size() - 4, 4, ".png") == 0 &&
           std::all_of(n.begin(), n.end() - 4, [](char c) { return c >= '0' && c <= '9'; });
  };
  for (const auto& top : sortedNames(dir)) {
    const bool split =
        std::find(std::begin(kEntries), std::end(kEntries), top) != std::end(kEntries);
    if (!split) continue;  // the marker, and the user's own files beside the splits: kept
    if (type(dir / top) != fs::file_type::directory) return top;
    for (const auto& cls : sortedNames(dir / top)) {
      const fs::path c = dir / top / cls;
      if (cls == ".fixres-index" && type(c) == fs::file_type::regular) continue;
      if (type(c) != fs::file_type::directory) return top + "/" + cls;
      for (const auto& file : sortedNames(c)) {
        if (!isImage(file) || type(c / file) != fs::file_type::regular)
          return top + "/" + cls + "/" + file;
      }
    }
  }
  return "";
}

// What is at --out, refusing (UsageError naming it) anything import must not write into.
OutFolder inspectOut(const std::string& out) {
  std::error_code ec;
  fs::path given = fs::absolute(fs::path(out), ec).lexically_normal();
  FIXRES_CHECK(!ec, UsageError, "--out ", out, ": ", ec.message());
  if (!given.has_filename() && given.has_parent_path() && given != given.root_path())
    given = given.parent_path();  // "dir/" -> "dir"
  const fs::file_status link = fs::symlink_status(given, ec);
  FIXRES_CHECK(!ec || link.type() == fs::file_type::not_found, UsageError, "--out ", out, ": ",
               ec.message());
  if (link.type() == fs::file_type::not_found) return {given, OutState::kAbsent, ""};
  const fs::file_status target = fs::status(given, ec);
  FIXRES_CHECK(target.type() != fs::file_type::not_found, UsageError, "--out ", out,
               " is a symbolic link to nothing: give a new or empty folder");
  FIXRES_CHECK(fs::is_directory(target), UsageError, "--out ", out,
               " exists and is not a folder: import writes only into a new or empty folder or "
               "one it made");
  OutFolder r{fs::canonical(given, ec), OutState::kEmpty, ""};
  FIXRES_CHECK(!ec, UsageError, "--out ", out, ": ", ec.message());
  if (auto stamp = readMarker(r.path)) {
    r.state = OutState::kImported;
    r.stamp = *stamp;
    return r;
  }
  const bool empty = fs::is_empty(r.path, ec);
  FIXRES_CHECK(!ec, UsageError, "--out ", out, ": cannot list folder: ", ec.message());
  FIXRES_CHECK(empty, UsageError, "--out ", out,
               " is a folder that is not empty and was not made by fixres import (no ", kMarker,
               " of fixres import inside): give a new or empty folder");
  return r;
}

bool isInside(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  (void)p;
  return d == dir.end();
}

// Replacing an earlier import removes its entries: never the ones the current folder is in.
void checkNotInUse(const OutFolder& out, const std::string& given) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return;  // no current folder: nothing of it to protect
  for (const char* e : kEntries) {
    FIXRES_CHECK(!isInside(cwd, out.path / e), UsageError, "--out ", given,
                 ": the current folder is inside ", (out.path / e).string(),
                 ", which replacing the earlier import would remove");
  }
}

// True when `out` holds this very import; refuses (UsageError) to replace an earlier one that
// the current folder is in.
// Replacing it would also remove what the user put inside its splits: anything import does not
// make there refuses the replacement (UsageError naming it).
bool holdsImport(const OutFolder& out, const std::string& stamp, const std::string& given) {
  if (out.state != OutState::kImported) return false;
  if (out.stamp == stamp) return true;
  checkNotInUse(out, given);
  std::string foreign;
  try {
    foreign = firstForeignEntry(out.path);
  } catch (const fs::filesystem_error& e) {
    FIXRES_FAIL(UsageError, "--out ", given, ": cannot list the earlier import: ", e.what());
  }
  FIXRES_CHECK(foreign.empty(), UsageError, "--out ", given, " holds ", foreign,
               ", which fixres import did not make: replacing the earlier import would remove "
               "it (move it elsewhere, or give a new or empty folder)");
  return false;
}

// rename(2) that never replaces: false when `to` exists, DataError on any other failure.
bool moveNoReplace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {  // a file system without RENAME_NOREPLACE
    std::error_code ec;
    if (fs::symlink_status(to, ec).type() != fs::file_type::not_found) return false;
    if (::rename(from.c_str(), to.c_str()) == 0) return true;
    err = errno;
  }
  if (err == EEXIST || err == ENOTEMPTY) return false;
  FIXRES_FAIL(DataError, "cannot move ", from.string(), " to ", to.string(), ": ",
              std::strerror(err));
}

void mustMove(const fs::path& from, const fs::path& to) {
  FIXRES_CHECK(moveNoReplace(from, to), DataError, "cannot move ", from.string(), " to ",
               to.string(), ": it appeared while importing");
}

// A folder of our own beside the output (same file system, so the result moves by rename),
// removed with its contents unless released.
class TempSibling {
 public:
  explicit TempSibling(const fs::path& parent) {
    makeDirectories(parent.string());
    std::string pattern = (parent / ".fixres-import-XXXXXX").string();
    FIXRES_CHECK(::mkdtemp(pattern.data()) != nullptr, DataError,
                 "cannot create a temporary folder in ", parent.string(), ": ",
                 std::strerror(errno));
    path_ = pattern;
  }
  ~TempSibling() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  TempSibling(const TempSibling&) = delete;
  TempSibling& operator=(const TempSibling&) = delete;
  const fs::path& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// Moves the finished import in `tmp` to `out`. False when a folder appeared at an absent `out`
// meanwhile (the caller looks again).
bool publish(const OutFolder& out, TempSibling& tmp) {
  if (out.state == OutState::kAbsent) {
    if (!moveNoReplace(tmp.path(), out.path)) return false;
    tmp.release();
    return true;
  }
  if (out.state == OutState::kImported) {
    // Still ours, but marked incomplete until the new entries are in place.
    writeFileAtomic((out.path / kMarker).string(), kReplacing);
    const fs::path old = tmp.path() / ".replaced";
    makeDirectories(old.string());
    for (const char* e : kEntries) {
      std::error_code ec;
      if (fs::symlink_status(out.path / e, ec).type() != fs::file_type::not_found)
        mustMove(out.path / e, old / e);
    }
  }
  for (const char* e : kEntries) mustMove(tmp.path() / e, out.path / e);
  // Last, so that the folder is complete once it holds the new stamp. The "replacing" marker is
  // ours to overwrite.
  const fs::path from = tmp.path() / kMarker, to = out.path / kMarker;
  if (out.state == OutState::kImported) {
    FIXRES_CHECK(::rename(from.c_str(), to.c_str()) == 0, DataError, "cannot move ", from.string(),
                 " to ", to.string(), ": ", std::strerror(errno));
  } else {
    mustMove(from, to);
  }
  return true;
}

}  // namespace

std::vector<std::string> fashionMnistClassNames() {
  return {"0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat",
          "5_sandal",     "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle_boot"};
}

ImportReport importIdx(const ImportOptions& o) {
  FIXRES_CHECK(!o.outDir.empty(), UsageError, "import needs an output folder (--out)");
  OutFolder out = inspectOut(o.outDir);
  auto train = openIdx(findIdx(o.sourceDir, "train-images-idx3-ubyte"),
                       findIdx(o.sourceDir, "train-labels-idx1-ubyte"));
  auto test = openIdx(findIdx(o.sourceDir, "t10k-images-idx3-ubyte"),
                      findIdx(o.sourceDir, "t10k-labels-idx1-ubyte"));
  auto names = o.classNames;
  if (names.empty())
    for (size_t c = 0; c < train->classes().size(); ++c) names.push_back(train->classes()[c]);
  FIXRES_CHECK(names.size() >= train->classes().size(), UsageError, "import: ", names.size(),
               " class names for ", train->classes().size(), " classes");
  int64_t nTrain = static_cast<int64_t>(train->size());
  if (o.limitTrain >= 0) nTrain = std::min(nTrain, o.limitTrain);
  int64_t nVal = static_cast<int64_t>(test->size());
  if (o.limitVal >= 0) nVal = std::min(nVal, o.limitVal);
  FIXRES_CHECK(o.holdout >= 0 && o.holdout < nTrain, UsageError, "--holdout ", o.holdout,
               " must be smaller than the ", nTrain, " training images");
  ImportReport r;
  r.train = nTrain - o.holdout;
  r.holdout = o.holdout;
  r.val = nVal;
  const std::string stamp = stampOf(r.train, r.holdout, r.val);
  r.alreadyThere = holdsImport(out, stamp, o.outDir);
  if (r.alreadyThere) return r;
  TempSibling tmp(out.path.parent_path());
  const std::string dir = tmp.path().string();
  if (!exportSplit(*train, 0, r.train, dir + "/train", names) ||
      !exportSplit(*train, r.train, nTrain, dir + "/holdout", names) ||
      !exportSplit(*test, 0, nVal, dir + "/val", names)) {
    r.stopSignal = stopSignal();
    return r;  // the temporary folder goes with `tmp`
  }
  writeFileAtomic(dir + "/" + kMarker, stamp);
  if (publish(out, tmp)) return r;
  // A folder appeared at --out while we wrote (another import?): judge it as at the start.
  out = inspectOut(o.outDir);
  r.alreadyThere = holdsImport(out, stamp, o.outDir);
  FIXRES_CHECK(r.alreadyThere || publish(out, tmp), UsageError, "--out ", o.outDir,
               " keeps changing while importing");
  return r;
}

}  // namespace fixres::data
