// Image folder, IDX and in-memory datasets.
#include "fixres/data/Dataset.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/image/Decode.h"

namespace fixres::data {

namespace fs = std::filesystem;

Dataset::~Dataset() = default;

std::vector<size_t> Dataset::shardSizes() const {
  return {};
}

namespace {

// The file name's extension is one torchvision's ImageFolder lists (image/Codec.h).
bool hasImageExtension(const std::string& filename) {
  const size_t dot = filename.rfind('.');
  return dot != std::string::npos && image::isImageFolderExtension(filename.substr(dot));
}

// Files with an image extension that the listing leaves out, reported in one warning per kind.
struct LeftOut {
  int64_t count = 0;
  std::string example;
  void add(const std::string& path) {
    if (count++ == 0) example = path;
  }
  void warn(const std::string& root, const std::string& what) const {
    if (count > 0) log::warn("data: ", root, ": left out ", count, " ", what, ", e.g. ", example);
  }
};

struct WalkedFile {
  std::string name;
  bool regular = false;  // a regular file, or a symlink to one
  uint64_t size = 0;
  int64_t mtimeNs = 0;
  bool operator<(const WalkedFile& o) const { return name < o.name; }
};

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(std::string root, std::vector<std::string> classes,
                     std::vector<std::string> paths, std::vector<int64_t> labels)
      : root_(std::move(root)),
        classes_(std::move(classes)),
        paths_(std::move(paths)),
        labels_(std::move(labels)) {}
  size_t size() const override { return paths_.size(); }
  int64_t label(size_t i) const override { return labels_.at(i); }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(size_t i) const override { return paths_.at(i); }
  RawSample fetch(size_t i) const override {
    RawSample s;
    s.name = paths_.at(i);
    s.bytes = std::make_shared<const std::vector<uint8_t>>(image::readFile(s.name));
    return s;
  }
  std::string source() const override { return root_; }

 private:
  std::string root_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
};

// Python's sorted(os.walk(dir, followlinks=True)): directories ordered by their full path,
// files sorted by name within each. With `stamps`, each folder's stamp (taken before it is
// listed, so a change during the walk shows later) is appended, its path without the first
// `baseLength` characters.
void walkSorted(const fs::path& dir,
                std::vector<std::pair<std::string, std::vector<WalkedFile>>>& out, int depth,
                std::vector<FolderStamp>* stamps = nullptr, size_t baseLength = 0) {
  FIXRES_CHECK(depth < 64, DataError, dir.string(), ": folders nested too deep (symlink loop?)");
  if (stamps) {
    const std::string full = dir.string();
    // A folder that cannot be stat-ed gets inode 0 (never a real one): never current.
    const std::string rel = full.substr(baseLength);
    stamps->push_back(stampFolder(full, rel).value_or(FolderStamp{rel, 0, 0, 0}));
  }
  std::vector<WalkedFile> files;
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    struct stat st {};  // follows symlinks; fails when broken
    const bool found = ::stat(it->path().c_str(), &st) == 0;
    if (found && S_ISDIR(st.st_mode)) {
      subdirs.push_back(it->path());
    } else {
      WalkedFile f{it->path().filename().string(), found && S_ISREG(st.st_mode)};
      if (f.regular) {
        f.size = static_cast<uint64_t>(st.st_size);
        f.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      }
      files.push_back(std::move(f));
    }
  }
  FIXRES_CHECK(!ec, DataError, dir.string(), ": cannot list folder: ", ec.message());
  std::sort(files.begin(), files.end());
  out.emplace_back(dir.string(), std::move(files));
  for (const auto& d : subdirs) walkSorted(d, out, depth + 1, stamps, baseLength);
}

// The image files of a sorted walk that fixres reads (`take` gets each path and its file), the
// others counted.
template <typename Take>
void takeImages(const std::vector<std::pair<std::string, std::vector<WalkedFile>>>& walk,
                LeftOut& notRegular, Take&& take) {
  for (const auto& [dir, files] : walk) {
    for (const auto& f : files) {
      if (!hasImageExtension(f.name)) continue;
      const std::string path = (fs::path(dir) / f.name).string();
      if (!f.regular) {
        notRegular.add(path);  // reading a FIFO or a device would block or never end
      } else {
        take(path, f);
      }
    }
  }
}

// One warning for the files left out.
void warnLeftOut(const std::string& root, const LeftOut& notRegular) {
  notRegular.warn(root,
                  "file(s) that are not regular files (FIFOs, sockets, devices, broken links)");
}

}  // namespace

std::vector<std::string> classFolders(const std::string& root) {
  std::error_code ec;
  std::vector<std::string> classes;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec2) && !isShardWorkFolderName(name)) classes.push_back(name);
  }
  FIXRES_CHECK(!ec, DataError, root, ": cannot list folder: ", ec.message());
  std::sort(classes.begin(), classes.end());
  return classes;
}

namespace {

// " (the N .tar file(s) in root are not read: ...)" when `root` holds tar files, else "".
std::string tarFilesNote(const std::string& root) {
  std::error_code ec;
  size_t tars = 0;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_directory(ec2) && lowerCase(it->path().extension().string()) == ".tar") ++tars;
  }
  if (tars == 0) return "";
  return "; its " + std::to_string(tars) +
         " .tar file(s) are not read: a folder with sub-folders holding images is an image "
         "folder, not a shard folder";
}

}  // namespace

std::shared_ptr<Dataset> openImageFolder(const std::string& root) {
  return openImageFolder(root, FileIndexOptions{});
}

std::shared_ptr<Dataset> openImageFolder(const std::string& root, const FileIndexOptions& index,
                                         FileIndexReport* report) {
  std::error_code ec;
  FIXRES_CHECK(fs::is_directory(root, ec), DataError, "dataset folder ", root,
               " does not exist or is not a folder");
  std::vector<std::string> classes = classFolders(root);
  FIXRES_CHECK(!classes.empty(), DataError, "couldn't find any class folder in ", root);
  // Paths are kept relative to the root in the index and joined back exactly as the walk
  // joins them.
  const std::string joined = (fs::path(root) / "x").string();
  const std::string base = joined.substr(0, joined.size() - 1);
  FileIndexReport localReport;
  FileIndexReport& rep = report ? *report : localReport;
  rep = FileIndexReport{};
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  LeftOut notRegular;
  if (index.enabled) {
    if (auto found = loadFolderIndex(root, classes, index, rep)) {
      paths.reserve(found->files.size());
      labels.reserve(found->files.size());
      for (const IndexedFile& f : found->files) {
        paths.push_back(base + f.path);
        labels.push_back(f.label);
      }
      notRegular.count = found->notRegular.count;
      notRegular.example = notRegular.count > 0 ? base + found->notRegular.example : "";
      warnLeftOut(root, notRegular);
      return std::make_shared<ImageFolderDataset>(root, std::move(classes), std::move(paths),
                                                  std::move(labels));
    }
  }
  const int64_t scanStartNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  FolderIndex scanned;
  std::vector<FolderStamp>* stamps = index.enabled ? &scanned.folders : nullptr;
  std::vector<std::string> empty;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::pair<std::string, std::vector<WalkedFile>>> walk;
    walkSorted(fs::path(root) / classes[c], walk, 0, stamps, base.size());
    std::sort(walk.begin(), walk.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t before = paths.size();
    takeImages(walk, notRegular, [&](const std::string& path, const WalkedFile& f) {
      paths.push_back(path);
      labels.push_back(static_cast<int64_t>(c));
      if (stamps)
        scanned.files.push_back(
            {path.substr(base.size()), static_cast<int64_t>(c), f.size, f.mtimeNs});
    });
    if (paths.size() == before) empty.push_back(classes[c]);
  }
  warnLeftOut(root, notRegular);
  if (!empty.empty()) {
    std::string list;
    for (const auto& e : empty) list += (list.empty() ? "" : ", ") + e;
    FIXRES_FAIL(DataError, root, ": found no valid file for the classes ", list,
                " (supported extensions: ", image::imageFolderExtensionList(), ")",
                tarFilesNote(root));
  }
  if (index.enabled) {
    scanned.classes = classes;
    scanned.notRegular.count = notRegular.count;
    scanned.notRegular.example = notRegular.count > 0 ? notRegular.example.substr(base.size()) : "";
    saveFolderIndex(root, std::move(scanned), index, scanStartNs, rep);
  }
  return std::make_shared<ImageFolderDataset>(root, std::move(classes), std::move(paths),
                                              std::move(labels));
}

std::shared_ptr<Dataset> openImageFiles(const std::string& root) {
  std::error_code ec;
  FIXRES_CHECK(fs::is_directory(root, ec), DataError, "image folder ", root,
               " does not exist or is not a folder");
  std::vector<std::pair<std::string, std::vector<WalkedFile>>> walk;
  walkSorted(fs::path(root), walk, 0);
  std::sort(walk.begin(), walk.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> paths;
  LeftOut notRegular;
  takeImages(walk, notRegular,
             [&](const std::string& path, const WalkedFile&) { paths.push_back(path); });
  warnLeftOut(root, notRegular);
  FIXRES_CHECK(!paths.empty(), DataError, root,
               ": found no image (supported extensions: ", image::imageFolderExtensionList(), ")");
  std::vector<int64_t> labels(paths.size(), 0);
  return std::make_shared<ImageFolderDataset>(root, std::vector<std::string>{""}, std::move(paths),
                                              std::move(labels));
}

// ---- IDX -------------------------------------------------------------------------------------
namespace {

// Whole file through zlib, which reads gzip and plain files alike: a regular file (refused without
// blocking otherwise) of at most 4 GiB, and at most 4 GiB once decompressed.
std::vector<uint8_t> readMaybeGzipped(const std::string& path) {
  uint64_t size = 0;
  std::string why;
  const int fd = openRegularFile(path, kReadFileMaxBytes, "IDX file", &size, &why);
  FIXRES_CHECK(fd >= 0, DataError, why);
  gzFile f = gzdopen(fd, "rb");
  if (f == nullptr) ::close(fd);
  FIXRES_CHECK(f != nullptr, DataError, path, ": cannot open file");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) {
    if (out.size() + static_cast<size_t>(n) > kReadFileMaxBytes) {
      gzclose(f);
      FIXRES_FAIL(DataError, path, ": more than ", kReadFileMaxBytes, " bytes once decompressed");
    }
    out.insert(out.end(), buf, buf + n);
  }
  int err = 0;
  const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
  const std::string message = msg ? msg : "";
  gzclose(f);
  FIXRES_CHECK(n == 0, DataError, path, ": read error (", message, ")");
  return out;
}

uint32_t bigEndian32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

class IdxDataset : public Dataset {
 public:
  IdxDataset(std::string imagesPath, std::vector<uint8_t> pixels, int rows, int cols,
             std::vector<int64_t> labels, std::vector<std::string> classes)
      : imagesPath_(std::move(imagesPath)),
        pixels_(std::move(pixels)),
        rows_(rows),
        cols_(cols),
        labels_(std::move(labels)),
        classes_(std::move(classes)) {}
  size_t size() const override { return labels_.size(); }
  int64_t label(size_t i) const override { return labels_.at(i); }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(size_t i) const override { return imagesPath_ + "[" + std::to_string(i) + "]"; }
  RawSample fetch(size_t i) const override {
    FIXRES_CHECK(i < labels_.size(), InternalError, "IDX index ", i, " out of range");
    RawSample s;
    s.name = name(i);
    s.isDecoded = true;
    s.decoded = image::Image(cols_, rows_);
    const uint8_t* src = pixels_.data() + i * size_t(rows_) * cols_;
    uint8_t* dst = s.decoded.pixels.data();
    for (size_t k = 0; k < size_t(rows_) * cols_; ++k, dst += 3) dst[0] = dst[1] = dst[2] = src[k];
    return s;
  }
  std::string source() const override { return imagesPath_; }

 private:
  std::string imagesPath_;
  std::vector<uint8_t> pixels_;  // N x rows x cols, grayscale
  int rows_, cols_;
  std::vector<int64_t> labels_;
  std::vector<std::string> classes_;
};

}  // namespace

std::shared_ptr<Dataset> openIdx(const std::string& imagesPath, const std::string& labelsPath) {
  std::vector<uint8_t> images = readMaybeGzipped(imagesPath);
  const std::vector<uint8_t> labels = readMaybeGzipped(labelsPath);
  FIXRES_CHECK(images.size() >= 16 && bigEndian32(images.data()) == 0x00000803, DataError,
               imagesPath, ": not an IDX image file (expected magic 0x00000803, 3 dimensions)");
  FIXRES_CHECK(labels.size() >= 8 && bigEndian32(labels.data()) == 0x00000801, DataError,
               labelsPath, ": not an IDX label file (expected magic 0x00000801)");
  const uint32_t n = bigEndian32(images.data() + 4);
  const uint32_t rows = bigEndian32(images.data() + 8), cols = bigEndian32(images.data() + 12);
  FIXRES_CHECK(rows > 0 && cols > 0 && rows <= 4096 && cols <= 4096, DataError, imagesPath,
               ": bad image size ", rows, "x", cols);
  FIXRES_CHECK(images.size() - 16 == uint64_t(n) * rows * cols, DataError, imagesPath,
               ": truncated or oversized (", images.size() - 16, " pixel bytes for ", n,
               " images of ", rows, "x", cols, ")");
  const uint32_t nLabels = bigEndian32(labels.data() + 4);
  FIXRES_CHECK(labels.size() - 8 == nLabels, DataError, labelsPath, ": truncated (",
               labels.size() - 8, " labels, header says ", nLabels, ")");
  FIXRES_CHECK(nLabels == n, DataError, imagesPath, " has ", n, " images but ", labelsPath, " has ",
               nLabels, " labels");
  FIXRES_CHECK(n > 0, DataError, imagesPath, ": no images");
  std::vector<int64_t> lab(labels.begin() + 8, labels.end());
  const int64_t maxLabel = *std::max_element(lab.begin(), lab.end());
  std::vector<std::string> classes;
  for (int64_t c = 0; c <= maxLabel; ++c) classes.push_back(std::to_string(c));
  images.erase(images.begin(), images.begin() + 16);
  return std::make_shared<IdxDataset>(imagesPath, std::move(images), int(rows), int(cols),
                                      std::move(lab), std::move(classes));
}

// ---- relabelled -----------------------------------------------------------------------------
namespace {

class RelabelledDataset : public Dataset {
 public:
  RelabelledDataset(std::shared_ptr<const Dataset> base, std::vector<std::string> classes,
                    std::vector<int64_t> map)
      : base_(std::move(base)), classes_(std::move(classes)), map_(std::move(map)) {}
  size_t size() const override { return base_->size(); }
  int64_t label(size_t i) const override { return map_.at(static_cast<size_t>(base_->label(i))); }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(size_t i) const override { return base_->name(i); }
  RawSample fetch(size_t i) const override { return base_->fetch(i); }
  std::string source() const override { return base_->source(); }
  std::vector<size_t> shardSizes() const override { return base_->shardSizes(); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<std::string> classes_;
  std::vector<int64_t> map_;  // base label -> label among classes_
};

}  // namespace

std::shared_ptr<const Dataset> labelledAs(std::shared_ptr<const Dataset> base,
                                          const std::vector<std::string>& classes) {
  if (classes.empty() || base->classes() == classes) return base;
  std::vector<int64_t> map;
  for (const auto& c : base->classes()) {
    const auto it = std::find(classes.begin(), classes.end(), c);
    if (it == classes.end()) return base;
    map.push_back(static_cast<int64_t>(it - classes.begin()));
  }
  return std::make_shared<RelabelledDataset>(std::move(base), classes, std::move(map));
}

// ---- in memory -------------------------------------------------------------------------------
namespace {

class InMemoryDataset : public Dataset {
 public:
  explicit InMemoryDataset(std::shared_ptr<const Dataset> base) : base_(std::move(base)) {
    samples_.reserve(base_->size());
    for (size_t i = 0; i < base_->size(); ++i) samples_.push_back(base_->fetch(i));
  }
  size_t size() const override { return samples_.size(); }
  int64_t label(size_t i) const override { return base_->label(i); }
  const std::vector<std::string>& classes() const override { return base_->classes(); }
  std::string name(size_t i) const override { return samples_.at(i).name; }
  RawSample fetch(size_t i) const override { return samples_.at(i); }
  std::string source() const override { return base_->source(); }
  std::vector<size_t> shardSizes() const override { return base_->shardSizes(); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<RawSample> samples_;
};

}  // namespace

std::shared_ptr<Dataset> filesDataset(std::string source, std::vector<std::string> classes,
                                      std::vector<std::string> paths, std::vector<int64_t> labels) {
  return std::make_shared<ImageFolderDataset>(std::move(source), std::move(classes),
                                              std::move(paths), std::move(labels));
}

std::shared_ptr<Dataset> cacheInMemory(std::shared_ptr<const Dataset> dataset) {
  return std::make_shared<InMemoryDataset>(std::move(dataset));
}

void checkSameClasses(const Dataset& train, const Dataset& val) {
  const auto& a = train.classes();
  const auto& b = val.classes();
  if (a == b) return;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  FIXRES_FAIL(DataError, "class lists differ: ", train.source(), " has ", a.size(), " classes, ",
              val.source(), " has ", b.size(), "; first difference at class ", i, " ('",
              i < a.size() ? a[i] : std::string("<none>"), "' vs '",
              i < b.size() ? b[i] : std::string("<none>"), "')");
}

}  // namespace fixres::data
