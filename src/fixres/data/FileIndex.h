// A cached listing of an image folder, so that opening a large tree on a slow (network) file
// system stats its ~1000 folders instead of listing and stat-ing its ~1M files.
//
// The index holds what openImageFolder found (classes; per sample the path relative to the root,
// label, size and mtime; the files it left out, for its warnings) and a stamp (inode, mtime,
// ctime) of every folder it walked below the root. A folder's mtime and ctime change whenever an
// entry is added, removed or renamed in it, so when the root still has the same class folders
// and every stamp matches, the listing is still what a scan would find. Files rewritten in place
// keep their names: their recorded sizes and mtimes are not re-checked.
//
// Where it lives: `<root>/.fixres-index` when the root is writable, else
// `<cacheDir>/<sha256 of the root's absolute path>.index` (cacheDir from the options; the CLI
// uses $XDG_CACHE_HOME/fixres or ~/.cache/fixres). A missing, corrupt, foreign or stale index is
// never an error: the tree is scanned again (a debug line says why) and the index rewritten. An
// index that is not a regular file, is larger than kFolderIndexMaxBytes or lists a path that
// leaves the root is not an error either, but one warning names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fixres::data {

// The largest index read or written: 1 GiB. An index takes about 60 bytes per file (an ImageNet
// train folder, 1.28 M files, about 80 MB), so this allows some 17 million files.
inline constexpr uint64_t kFolderIndexMaxBytes = uint64_t(1) << 30;

struct FileIndexOptions {
  bool enabled = false;  // library default: plain scans; the CLI turns it on
  // Fallback folder for indexes of trees that cannot be written; "" for none.
  std::string cacheDir;
  // Folders modified less than this long before a scan are "racy" (a change within the same
  // timestamp tick would not show): no index is written for such a tree.
  double racySeconds = 2.0;
};

// What happened while opening a folder with the index on.
struct FileIndexReport {
  bool usedIndex = false;  // the listing came from a valid index
  bool saved = false;      // a new index was written
  std::string path;        // the index read or written ("" when none)
  std::string why;         // why no index was used or written, for messages
};

// A folder's identity for change detection.
struct FolderStamp {
  std::string path;  // relative to the root
  uint64_t inode = 0;
  int64_t mtimeNs = 0;
  int64_t ctimeNs = 0;
  bool operator==(const FolderStamp& o) const {
    return path == o.path && inode == o.inode && mtimeNs == o.mtimeNs && ctimeNs == o.ctimeNs;
  }
};

struct IndexedFile {
  std::string path;  // relative to the root
  int64_t label = 0;
  uint64_t size = 0;
  int64_t mtimeNs = 0;
};

// Image files the listing left out, reported in one warning per kind.
struct LeftOutFiles {
  int64_t count = 0;
  std::string example;  // relative to the root
};

struct FolderIndex {
  std::string absoluteRoot;  // the root when scanned (checked for indexes in the cache folder)
  std::vector<std::string> classes;
  std::vector<FolderStamp> folders;
  std::vector<IndexedFile> files;
  // undecoded: files in image formats not decoded, none since version 2 (every ImageFolder
  // extension is); kept in the layout.
  LeftOutFiles undecoded, notRegular;
};

// Stamp of `fullPath` (symlinks followed), named `relPath`; nullopt when it cannot be stat-ed.
std::optional<FolderStamp> stampFolder(const std::string& fullPath, const std::string& relPath);

// The index next to the tree, and the one in `cacheDir` ("" when cacheDir is "").
std::string indexPathNextTo(const std::string& root);
std::string indexPathInCache(const std::string& root, const std::string& cacheDir);

// Serialised form (magic, version, payload, CRC-32C) and back; nullopt (with `why`) for bytes
// that are not an intact index of this version, and for an index with an entry that could lead
// outside the root (folderIndexEntryProblem).
std::string encodeFolderIndex(const FolderIndex& index);
std::optional<FolderIndex> decodeFolderIndex(const std::string& bytes, std::string* why);

// Why `index` cannot be trusted to stay inside its root, naming the entry ("" when it can). Every
// path must be relative, without empty, "." or ".." components or NUL characters; classes are
// single names; every folder and left-out file lies in a class folder; every file lies in the
// folder of its label's class, in a folder the index stamps.
std::string folderIndexEntryProblem(const FolderIndex& index);

// The index of `root` that is still current for its present `classes` (first the one next to
// the tree, then the one in the cache folder), or nullopt; report says which and why not.
std::optional<FolderIndex> loadFolderIndex(const std::string& root,
                                           const std::vector<std::string>& classes,
                                           const FileIndexOptions& options,
                                           FileIndexReport& report);

// Writes the index next to the tree, else in the cache folder; never throws (a failure is a
// debug line and report.why). Skipped when a folder's mtime is within racySeconds of
// `scanStartNs` (wall clock, ns since the epoch, taken before the scan).
// `index.absoluteRoot` is set here.
void saveFolderIndex(const std::string& root, FolderIndex index, const FileIndexOptions& options,
                     int64_t scanStartNs, FileIndexReport& report);

}  // namespace fixres::data
