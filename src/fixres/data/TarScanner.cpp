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

}  // namespace

int openShardFd(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FIXRES_CHECK(fd >= 0, DataError, path, ": cannot open: ", std::strerror(errno));
  return fd;
}

ShardInfo scanShard(const std::string& path, bool labelled) {
  const ByteSource file = openShardFile(path);
  ShardInfo info;
  info.name = std::filesystem::path(path).filename().string();
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
  std::array<char, kTarBlock> h{};
  while (true) {
    if (offset + kTarBlock > file.size()) {
      // Archives end with two zero blocks; tolerate a missing end marker at a block boundary.
      FIXRES_CHECK(offset == file.size(), DataError, path, ": truncated tar header at byte ",
                   offset);
      break;
    }
    FIXRES_CHECK(file.readExact(offset, h.data(), kTarBlock), DataError, path,
                 ": cannot read at byte ", offset, ": ", std::strerror(errno));
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == 0; })) break;
    uint64_t stored = 0;
    FIXRES_CHECK(parseTarNumber(h.data() + 148, 8, &stored), DataError, path,
                 ": not a tar file (bad header checksum field at byte ", offset, ")");
    const uint64_t sum = tarChecksum(h);
    FIXRES_CHECK(sum == stored, DataError, path, ": corrupt tar header at byte ", offset,
                 " (checksum ", stored, ", computed ", sum, ")");
    uint64_t size = 0;
    FIXRES_CHECK(parseTarNumber(h.data() + 124, 12, &size), DataError, path,
                 ": corrupt tar header at byte ", offset, " (size field)");
    const char type = h[156];
    const uint64_t dataOffset = offset + kTarBlock;
    FIXRES_CHECK(size <= file.size() && dataOffset <= file.size() - size, DataError, path,
                 ": truncated: the member at byte ", offset, " needs ", size,
                 " bytes, the file ends at ", file.size());
    const uint64_t next = dataOffset + tarPadded(size);
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
      name = tarHeaderName(h);
    }
    uint64_t memberSize = size, memberNext = next;
    if (paxHasSize) {
      memberSize = paxSize;
      FIXRES_CHECK(memberSize <= file.size() && dataOffset <= file.size() - memberSize, DataError,
                   path, ": truncated: the member at byte ", offset, " needs ", memberSize,
                   " bytes");
      memberNext = dataOffset + tarPadded(memberSize);
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

}  // namespace fixres::data
