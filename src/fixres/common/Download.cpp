// The weight cache: the per-file lock, the libcurl transfer with resume, checks.
#include "fixres/common/Download.h"

#if FIXRES_WITH_CURL
#include <curl/curl.h>
#endif
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/HttpResponse.h"
#include "fixres/common/Log.h"
#include "fixres/common/Sha256.h"
#include "fixres/common/StopSignal.h"

namespace fixres {
namespace {

using Clock = std::chrono::steady_clock;

// A stop signal ended the transfer: the part file stays, for the next run to resume.
class DownloadStopped : public InternalError {
 public:
  using InternalError::InternalError;
};

std::string sysText() {
  return std::strerror(errno);
}

std::string folderOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool isRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// The exclusive right to fetch one cache entry: flock on its part file `.<name>.part`, which
// the holder then writes. Waits for a live holder; the kernel drops the lock of a dead one, whose
// part file the next holder resumes. The name leaves the part file while its lock is held
// (renamed into place, or removed), so a process that opened it before checks, once it holds the
// lock, that the file it locked is still the one at the path, and starts again otherwise.
class EntryLock {
 public:
  EntryLock(std::string path, const std::string& what) : path_(std::move(path)) {
    for (int attempt = 0;; ++attempt) {
      makeDirectories(folderOf(path_));
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
      // The folder was just removed by a holder that failed and cleaned up: make it again.
      if (fd_ < 0 && errno == ENOENT && attempt < 100) continue;
      FIXRES_CHECK(fd_ >= 0, OutputError, "cannot create ", path_, ": ", sysText());
      if (!acquire(what)) return;  // no locks on this file system: go on without one
      struct stat held {
      }, now{};
      if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 &&
          held.st_ino == now.st_ino && held.st_dev == now.st_dev)
        return;
      ::close(fd_);
      fd_ = -1;
      FIXRES_CHECK(attempt < 1000, OutputError, "cannot lock ", path_, ": it keeps changing");
    }
  }
  ~EntryLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;

  int fd() const { return fd_; }

 private:
  // True once the lock is held; false when the file system has no locks.
  bool acquire(const std::string& what) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS) {
      log::warn("no file locks in ", folderOf(path_), ": fetching ", what, " unlocked");
      return false;
    }
    FIXRES_CHECK(errno == EWOULDBLOCK, OutputError, "cannot lock ", path_, ": ", sysText());
    log::info("waiting for another process fetching ", what);
    while (::flock(fd_, LOCK_EX) != 0) {
      FIXRES_CHECK(errno == EINTR, OutputError, "cannot lock ", path_, ": ", sysText());
      FIXRES_CHECK(stopSignal() == 0, DownloadStopped, "stopped by ", stopSignalName(stopSignal()),
                   " while waiting for another process fetching ", what);
    }
    return true;
  }

  std::string path_;
  int fd_ = -1;
};

// What one libcurl transfer sees: the part file, the response, the progress display.
struct Transfer {
  std::string url;
  std::string partPath;
  int fd = -1;
  int64_t offset = 0;         // bytes of the part file this response continues from
  bool firstBody = true;      // no body byte seen yet
  HttpResponseHead response;  // of the last response (redirects have their own)
  std::string failure;        // why the write callback refused data
  bool writeFailed = false;   // the cache could not be written (an OutputError)
  // Progress display.
  bool bar = false;
  std::string name;
  Clock::time_point start = Clock::now(), lastDraw{};
  bool drawn = false;
  bool stopped = false;  // a stop signal ended the transfer
};

size_t onHeader(char* data, size_t size, size_t count, void* user) {
  static_cast<Transfer*>(user)->response.addLine(std::string(data, size * count));
  return size * count;
}

size_t onBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (t->firstBody) {
    t->firstBody = false;
    // The status decides whether these bytes continue the part file or replace it.
    if (t->offset > 0) {
      const bool partial = t->response.statusLine.find(" 206") != std::string::npos;
      int64_t start = -1, total = -1;
      if (partial && parseContentRange(t->response.contentRange, start, total) &&
          start == t->offset) {
        log::info("resuming ", t->url, " at ", megabytes(t->offset));
      } else if (partial) {
        t->failure = "the server resumed at '" + t->response.contentRange + "', not at byte " +
                     std::to_string(t->offset);
        return 0;
      } else {
        log::info("the server of ", t->url, " does not resume downloads: fetching it whole");
        if (::ftruncate(t->fd, 0) != 0 || ::lseek(t->fd, 0, SEEK_SET) != 0) {
          t->failure = "cannot truncate " + t->partPath + ": " + sysText();
          t->writeFailed = true;
          return 0;
        }
        t->offset = 0;
      }
    }
  }
  const char* p = data;
  size_t left = bytes;
  while (left > 0) {
    const ssize_t n = ::write(t->fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      t->failure = "cannot write " + t->partPath + ": " + (n < 0 ? sysText() : "short write");
      t->writeFailed = true;
      return 0;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return bytes;
}

void drawBar(Transfer& t, int64_t now, int64_t total) {
  const double seconds = std::chrono::duration<double>(Clock::now() - t.start).count() + 1e-9;
  const double rate = static_cast<double>(now - t.offset) / seconds / 1e6;
  constexpr int kWidth = 30;
  char line[256];
  if (total > 0) {
    const double f = std::min(1.0, static_cast<double>(now) / static_cast<double>(total));
    const int filled = static_cast<int>(f * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, ' ');
    std::snprintf(line, sizeof(line), "\r%s %3d%% [%s] %.1f/%.1f MB %.1f MB/s ", t.name.c_str(),
                  static_cast<int>(f * 100), bar.c_str(), static_cast<double>(now) / 1e6,
                  static_cast<double>(total) / 1e6, rate);
  } else {
    std::snprintf(line, sizeof(line), "\r%s %.1f MB %.1f MB/s ", t.name.c_str(),
                  static_cast<double>(now) / 1e6, rate);
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
  t.drawn = true;
}

#if FIXRES_WITH_CURL
int onProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (stopSignal() != 0) {
    t->stopped = true;
    return 1;  // ends the transfer with CURLE_ABORTED_BY_CALLBACK
  }
  if (!t->bar || (dltotal == 0 && dlnow == 0)) return 0;  // nothing to show before the body
  const auto now = Clock::now();
  if (t->drawn && now - t->lastDraw < std::chrono::milliseconds(200)) return 0;
  t->lastDraw = now;
  drawBar(*t, t->offset + dlnow, dltotal > 0 ? t->offset + dltotal : -1);
  return 0;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
// Why a transfer failed, and whether it should be tried once more from byte 0.
enum class Outcome { kDone, kRestart };

// One GET of t.url appended to t.fd from t.offset (a Range request when t.offset > 0). Throws the
// errors of fetchToCache; returns kRestart when the server refused the range (416).
Outcome transfer(Transfer& t, const DownloadOptions& o) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  FIXRES_CHECK(curl != nullptr, InternalError, "cannot start libcurl");
  CURL* c = curl.get();
  char errorText[CURL_ERROR_SIZE] = {0};
  const std::string range = std::to_string(t.offset) + "-";
  const std::string agent = std::string("fixres/") + FIXRES_VERSION;
  curl_easy_setopt(c, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errorText);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  const long connectTimeout = std::min(o.connectTimeoutS, o.stallTimeoutS);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, connectTimeout);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.stallTimeoutS);
  // No content encoding: the bytes on the wire are the file's, so Content-Length and Range
  // count the same bytes as the part file.
  curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  if (t.offset > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);

  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  const std::string why = errorText[0] ? errorText : curl_easy_strerror(rc);
  struct stat st {};
  const int64_t have = ::fstat(t.fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  if (t.bar && rc == CURLE_OK) drawBar(t, have, have);  // the bar at its end
  if (t.bar && t.drawn) std::fputs("\n", stderr);

  if (rc == CURLE_OK) {
    // The size the server announced: Content-Range's total for a 206, Content-Length for a 200.
    int64_t expected = -1, start = 0;
    if (status == 206) {
      FIXRES_CHECK(parseContentRange(t.response.contentRange, start, expected), WeightsError,
                   "cannot download ", t.url, ": HTTP 206 without a usable Content-Range ('",
                   t.response.contentRange, "')");
    } else {
      curl_off_t length = -1;
      curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      expected = length;
    }
    FIXRES_CHECK(expected < 0 || have == expected, WeightsError, "download of ", t.url,
                 " is truncated: ", have, " of ", expected, " bytes");
    return Outcome::kDone;
  }
  if (rc == CURLE_HTTP_RETURNED_ERROR && status == 416 && t.offset > 0) return Outcome::kRestart;
  if (rc == CURLE_ABORTED_BY_CALLBACK && t.stopped)
    FIXRES_FAIL(DownloadStopped, "download of ", t.url, " stopped by ",
                stopSignalName(stopSignal()), "; ", megabytes(have), " kept in ", t.partPath,
                ", to be resumed by the next run");
  if (t.writeFailed) FIXRES_FAIL(OutputError, t.failure);
  if (rc == CURLE_HTTP_RETURNED_ERROR)
    FIXRES_FAIL(WeightsError, "cannot download ", t.url, ": ", t.response.statusText(status));
  if (rc == CURLE_PARTIAL_FILE)
    FIXRES_FAIL(WeightsError, "download of ", t.url, " is truncated: the connection closed early (",
                why, ")");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    FIXRES_FAIL(WeightsError, "cannot download ", t.url, ": timed out (", why, "; connect timeout ",
                std::min(o.connectTimeoutS, o.stallTimeoutS), " s, stall timeout ", o.stallTimeoutS,
                " s below 1 KiB/s)");
  if (!t.failure.empty()) FIXRES_FAIL(WeightsError, "cannot download ", t.url, ": ", t.failure);
  FIXRES_FAIL(WeightsError, "cannot download ", t.url, ": ", why);
}
#else
// Why a transfer failed, and whether it should be tried once more from byte 0.
enum class Outcome { kDone, kRestart };

// A build without libcurl (FIXRES_OPTIONAL_DEPS) fetches nothing.
[[noreturn]] Outcome transfer(Transfer& t, const DownloadOptions&) {
  FIXRES_FAIL(UsageError, "cannot download ", t.url,
              ": this build of fixres has no downloader (built without libcurl); fetch the file "
              "elsewhere and give its path");
}
#endif

bool digestMatches(const std::string& actual, const std::string& expected) {
  return expected.empty() || actual.compare(0, expected.size(), expected) == 0;
}

// Refuses a finished download that is empty or that o.checkFile refuses, saying what was sent.
void checkBody(const Transfer& t, const RemoteFile& file, const DownloadOptions& o) {
  struct stat st {};
  FIXRES_CHECK(::fstat(t.fd, &st) == 0, OutputError, "cannot read ", t.partPath, ": ", sysText());
  FIXRES_CHECK(st.st_size > 0, WeightsError, "cannot download ", file.url,
               ": the server sent 0 bytes (", t.response.statusText(200),
               "), not a weight file; the download was not kept");
  if (!o.checkFile) return;
  try {
    o.checkFile(t.partPath);
  } catch (const Error& e) {
    char bytes[256];
    const ssize_t n = ::pread(t.fd, bytes, sizeof(bytes), 0);
    const std::string head(bytes, n > 0 ? static_cast<size_t>(n) : 0);
    // The reader names the temporary, which is about to go: say "it" instead.
    std::string why = oneLine(e.what());
    for (auto at = why.find(t.partPath); at != std::string::npos; at = why.find(t.partPath, at))
      why.replace(at, t.partPath.size(), "it");
    FIXRES_FAIL(WeightsError, "cannot download ", file.url, ": the server sent ",
                describeBody(head, t.response.contentType, st.st_size),
                ", which fixres cannot read as weights (", why, "); the download was not kept");
  }
}

// `target`, a cached copy of `file`, unless it is empty or o.checkFile refuses it: then a
// WeightsError naming the URL, the reason and the command that fetches it again.
std::string checkedCached(const std::string& target, const RemoteFile& file,
                          const DownloadOptions& o) {
  std::string why;
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && st.st_size == 0) {
    why = target + " is empty";
  } else if (o.checkFile) {
    try {
      o.checkFile(target);
    } catch (const Error& e) {
      why = oneLine(e.what());
    }
  }
  FIXRES_CHECK(why.empty(), WeightsError, "the cached copy of ", file.url, " cannot be used (", why,
               "): 'fixres weights fetch --refresh ", remoteFileSpec(file), "' downloads it again");
  return target;
}

// Publishes the finished part file: fsync, its URL beside the target, rename over the target,
// fsync of the folder.
void publish(int fd, const std::string& part, const std::string& target, const std::string& url) {
  FIXRES_CHECK(::fsync(fd) == 0, OutputError, "cannot write ", part, ": fsync: ", sysText());
  const std::string urlFile = cacheUrlFile(target);
  writeFileAtomic(urlFile, url + "\n");
  if (::rename(part.c_str(), target.c_str()) != 0) {
    const std::string why = sysText();
    if (!isRegularFile(target)) ::unlink(urlFile.c_str());
    FIXRES_FAIL(OutputError, "cannot rename ", part, " to ", target, ": ", why);
  }
  const int dir = ::open(folderOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);  // best effort: some file systems refuse fsync on folders
    ::close(dir);
  }
}

// Fetches into `part` (open as `fd`, locked) and publishes it as `target`.
void fetchLocked(const RemoteFile& file, const std::string& target, const std::string& part, int fd,
                 const DownloadOptions& o) {
  Transfer t;
  t.url = file.url;
  t.partPath = part;
  t.bar = o.progressBar && log::level() <= log::Level::kInfo;
  t.name = baseName(target);
  t.fd = fd;
  // A part file with bytes belongs to a process that died: the lock is ours. Continue it, unless
  // the file is to be fetched afresh.
  if (o.refresh)
    FIXRES_CHECK(::ftruncate(t.fd, 0) == 0, OutputError, "cannot truncate ", part, ": ", sysText());
  const off_t have = ::lseek(t.fd, 0, SEEK_END);
  FIXRES_CHECK(have >= 0, OutputError, "cannot read ", part, ": ", sysText());
  t.offset = have;
  log::info("fetching ", file.url, " -> ", target,
            have > 0 ? " (" + megabytes(have) + " from an interrupted download)" : "");
  const auto start = Clock::now();
  if (transfer(t, o) == Outcome::kRestart) {
    log::info("the server refused to resume ", file.url, " at byte ", t.offset,
              ": fetching it whole");
    FIXRES_CHECK(::ftruncate(t.fd, 0) == 0 && ::lseek(t.fd, 0, SEEK_SET) == 0, OutputError,
                 "cannot truncate ", part, ": ", sysText());
    t.offset = 0;
    t.firstBody = true;
    t.start = Clock::now();
    FIXRES_CHECK(transfer(t, o) == Outcome::kDone, WeightsError, "cannot download ", file.url,
                 ": the server refused a request for the whole file (HTTP 416)");
  }
  checkBody(t, file, o);
  struct stat st {};
  ::fstat(t.fd, &st);
  if (!file.sha256.empty()) {
    const std::string actual = sha256File(part);
    FIXRES_CHECK(digestMatches(actual, file.sha256), WeightsError, "checksum mismatch for ",
                 file.url, ": expected SHA-256 ", file.sha256, file.sha256.size() < 64 ? "..." : "",
                 ", got ", actual, " (the file was not kept)");
  }
  publish(t.fd, part, target, file.url);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  char rate[64];
  std::snprintf(rate, sizeof(rate), " in %.1f s", seconds);
  log::info("fetched ", megabytes(st.st_size), rate,
            file.sha256.empty() ? " (no published checksum)" : " (SHA-256 checked)", ": ", target);
}

// Removes the folders from `folder` up to, not including, `root`, as long as they are empty.
void removeEmptyFolders(std::string folder, const std::string& root) {
  while (folder.size() > root.size() && folder.rfind(root, 0) == 0) {
    if (::rmdir(folder.c_str()) != 0) return;
    folder = folderOf(folder);
  }
}

}  // namespace

std::string fetchToCache(const RemoteFile& file, const DownloadOptions& o) {
  FIXRES_CHECK(!o.cacheDir.empty(), UsageError, "no cache folder to fetch ", file.url,
               " into: give --cache-dir, or set FIXRES_CACHE, XDG_CACHE_HOME or HOME");
  const std::string target = cachePathFor(o.cacheDir, file.url);
  // A cached file without a known checksum is used as it is, without taking the lock.
  if (!o.refresh && file.sha256.empty() && isRegularFile(target)) {
    log::debug("using the cached ", target, " for ", file.url);
    return checkedCached(target, file, o);
  }
  detail::initCurl();
  const std::string folder = folderOf(target), name = baseName(target);
  const std::string part = folder + "/." + name + ".part";
  try {
    EntryLock lock(part, file.url);
    // The part file leaves while the lock is held: the next holder may be resuming it.
    try {
      if (!o.refresh && isRegularFile(target)) {
        bool good = file.sha256.empty();  // fetched by another process while we waited
        if (!good) {
          const std::string actual = sha256File(target);
          good = digestMatches(actual, file.sha256);
          if (!good)
            log::warn("the cached ", target, " does not match its checksum (expected SHA-256 ",
                      file.sha256, ", got ", actual, "): fetching it again");
        }
        if (good) {
          ::unlink(part.c_str());  // the empty one this process created to lock
          return checkedCached(target, file, o);
        }
        FIXRES_CHECK(::unlink(target.c_str()) == 0, OutputError, "cannot remove ", target, ": ",
                     sysText());
        ::unlink(cacheUrlFile(target).c_str());
      }
      fetchLocked(file, target, part, lock.fd(), o);
      return target;
    } catch (const DownloadStopped&) {
      throw;
    } catch (...) {
      ::unlink(part.c_str());
      throw;
    }
  } catch (const DownloadStopped&) {
    throw;
  } catch (...) {
    removeEmptyFolders(folder, o.cacheDir);  // once the lock is released
    throw;
  }
}

}  // namespace fixres
