// The header scanner: a tar file's members, header after header, grouped into samples by key.
#include "fixres/data/TarScanner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/data/TarCodec.h"

namespace fixres::data {

namespace {

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

// One pass over the headers of the tar file at `path`: PAX and GNU long names apply to the member
// after them; the members of interest (images, .cls) gather into samples by key.
class TarScanner {
 public:
  TarScanner(const std::string& path, bool labelled)
      : path_(path), labelled_(labelled), file_(openShardFile(path)) {}

  ShardInfo scan() {
    while (readHeader()) {
      uint64_t size = 0;
      FIXRES_CHECK(parseTarNumber(h_.data() + 124, 12, &size), DataError, path_,
                   ": corrupt tar header at byte ", offset_, " (size field)");
      const char type = h_[156];
      const uint64_t dataOffset = offset_ + kTarBlock;
      FIXRES_CHECK(size <= file_.size() && dataOffset <= file_.size() - size, DataError, path_,
                   ": truncated: the member at byte ", offset_, " needs ", size,
                   " bytes, the file ends at ", file_.size());
      const uint64_t next = dataOffset + tarPadded(size);
      if (type == 'x' || type == 'L') {
        readExtended(type, size, dataOffset);
        offset_ = next;
        continue;
      }
      std::string name;
      if (!paxPath_.empty()) {
        name = paxPath_;
      } else if (!longName_.empty()) {
        name = longName_;
      } else {
        name = tarHeaderName(h_);
      }
      uint64_t memberSize = size, memberNext = next;
      if (paxHasSize_) {
        memberSize = paxSize_;
        FIXRES_CHECK(memberSize <= file_.size() && dataOffset <= file_.size() - memberSize,
                     DataError, path_, ": truncated: the member at byte ", offset_, " needs ",
                     memberSize, " bytes");
        memberNext = dataOffset + tarPadded(memberSize);
      }
      paxPath_.clear();
      longName_.clear();
      paxHasSize_ = false;
      offset_ = memberNext;
      if (type != '0' && type != '\0' && type != '7') continue;  // folders, links, global headers
      addMember(name, dataOffset, memberSize);
    }
    return finish();
  }

 private:
  struct Partial {
    ShardMember member;
    bool hasImage = false, hasCls = false;
    std::string clsProblem;
  };

  // Reads the header at offset_ into h_ and checks its checksum; false at the end of the archive.
  bool readHeader() {
    if (offset_ + kTarBlock > file_.size()) {
      // Archives end with two zero blocks; tolerate a missing end marker at a block boundary.
      FIXRES_CHECK(offset_ == file_.size(), DataError, path_, ": truncated tar header at byte ",
                   offset_);
      return false;
    }
    FIXRES_CHECK(file_.readExact(offset_, h_.data(), kTarBlock), DataError, path_,
                 ": cannot read at byte ", offset_, ": ", std::strerror(errno));
    if (std::all_of(h_.begin(), h_.end(), [](char c) { return c == 0; })) return false;
    uint64_t stored = 0;
    FIXRES_CHECK(parseTarNumber(h_.data() + 148, 8, &stored), DataError, path_,
                 ": not a tar file (bad header checksum field at byte ", offset_, ")");
    const uint64_t sum = tarChecksum(h_);
    FIXRES_CHECK(sum == stored, DataError, path_, ": corrupt tar header at byte ", offset_,
                 " (checksum ", stored, ", computed ", sum, ")");
    return true;
  }

  // A PAX extended header ('x': path and size) or a GNU long name ('L') for the next member.
  void readExtended(char type, uint64_t size, uint64_t dataOffset) {
    FIXRES_CHECK(size <= (1u << 20), DataError, path_, ": extended header of ", size,
                 " bytes at byte ", offset_);
    std::string text(size, '\0');
    FIXRES_CHECK(file_.readExact(dataOffset, text.data(), size), DataError, path_,
                 ": cannot read at byte ", dataOffset);
    if (type == 'x') {
      parsePax(text, &paxPath_, &paxSize_, &paxHasSize_);
    } else {
      longName_ = std::string(text.c_str());
    }
  }

  // A regular member named `name`: an image or a .cls joins its sample, anything else is ignored.
  void addMember(const std::string& name, uint64_t dataOffset, uint64_t size) {
    // WebDataset: key = everything before the first '.' of the last path component.
    const size_t slash = name.rfind('/');
    const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
    if (dot == std::string::npos) {
      ++ignored_;
      return;
    }
    const std::string key = name.substr(0, dot);
    const std::string ext = lowerCase(name.substr(dot + 1));
    const bool image = isImageExtension(ext);
    if (!image && ext != "cls") {
      ++ignored_;
      return;
    }
    auto [it, fresh] = byKey_.emplace(key, samples_.size());
    if (fresh) {
      samples_.emplace_back();
      samples_.back().member.key = key;
    }
    Partial& p = samples_[it->second];
    if (image) {
      if (p.hasImage) {
        p.member.problem = "two images (." + p.member.extension + " and ." + ext + ")";
        return;
      }
      p.hasImage = true;
      p.member.extension = ext;
      p.member.offset = dataOffset;
      p.member.size = size;
    } else {
      readLabel(&p, dataOffset, size);
    }
  }

  // The .cls member of `size` bytes at `dataOffset`: the sample's label, or why it has none.
  void readLabel(Partial* p, uint64_t dataOffset, uint64_t size) {
    p->hasCls = true;
    std::string text(std::min<uint64_t>(size, 64), '\0');
    FIXRES_CHECK(file_.readExact(dataOffset, text.data(), text.size()), DataError, path_,
                 ": cannot read at byte ", dataOffset);
    int64_t label = -1;
    const bool parsed = size <= 64 && parseLabel(text, &label);
    if (parsed && label <= kMaxShardLabel) {
      p->member.label = label;
    } else if (parsed) {
      p->clsProblem = "bad label (.cls holds " + std::to_string(label) + ", above " +
                      std::to_string(kMaxShardLabel) + ", the largest class index read)";
    } else {
      p->clsProblem = "bad label (.cls holds '" + text.substr(0, 20) + "', not a class index)";
    }
  }

  // The samples as members, each with its problem (and label -1) when it cannot be read.
  ShardInfo finish() {
    if (ignored_ > 0) {
      log::debug("data: ", path_, ": ignored ", ignored_,
                 " member(s) that are neither images (.jpg .png .webp ...) nor .cls");
    }
    ShardInfo info;
    info.name = std::filesystem::path(path_).filename().string();
    info.bytes = file_.size();
    info.members.reserve(samples_.size());
    for (auto& p : samples_) {
      ShardMember& m = p.member;
      if (m.problem.empty() && !p.hasImage) m.problem = "no image member (.jpg, .png, .webp, ...)";
      if (labelled_ && m.problem.empty() && !p.hasCls) m.problem = "no label (.cls member)";
      if (labelled_ && m.problem.empty() && !p.clsProblem.empty()) m.problem = p.clsProblem;
      if (!m.problem.empty()) m.label = -1;
      info.members.push_back(std::move(m));
    }
    return info;
  }

  const std::string path_;
  const bool labelled_;
  const ByteSource file_;
  std::vector<Partial> samples_;
  std::map<std::string, size_t> byKey_;
  std::string paxPath_;  // from a PAX header, for the next member
  uint64_t paxSize_ = 0;
  bool paxHasSize_ = false;
  std::string longName_;  // from a GNU long-name header, for the next member
  int64_t ignored_ = 0;
  uint64_t offset_ = 0;  // of the header being read
  std::array<char, kTarBlock> h_{};
};

}  // namespace

int openShardFd(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FIXRES_CHECK(fd >= 0, DataError, path, ": cannot open: ", std::strerror(errno));
  return fd;
}

ShardInfo scanShard(const std::string& path, bool labelled) {
  return TarScanner(path, labelled).scan();
}

}  // namespace fixres::data
