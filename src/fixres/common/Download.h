// Weight files fetched over HTTP(S) into a local cache (libcurl), written atomically, checked
// against a SHA-256 when one is known, resumed after an interruption, and shared safely between
// processes that fetch the same file at the same time.
#pragma once

#include <functional>
#include <string>

#include "fixres/common/RemoteFile.h"  // RemoteFile, parseRemoteFile, cachePathFor

namespace fixres {

struct DownloadOptions {
  std::string cacheDir;       // the cache folder; created when missing
  bool progressBar = false;   // a redrawn bar on stderr (when it is a terminal); else two lines
  long connectTimeoutS = 30;  // give up connecting after this long (or stallTimeoutS if shorter)
  long stallTimeoutS = 60;    // give up when less than 1 KiB/s arrives for this long
  bool refresh = false;       // fetch again even when the cache holds the file
  // Whether a file is one the caller can use (a weight file fixres reads): called on every
  // download before it enters the cache and on a cached file before it is returned; throws a
  // fixres::Error saying why not. Unset: any non-empty file is.
  std::function<void(const std::string& path)> checkFile;
};

// The local path of `file` (cachePathFor), fetched first unless the cache holds it (or
// options.refresh), with its URL in cacheUrlFile beside it.
//
// A cached file is used without any network access; when a checksum is known it is verified
// first, and a file that fails the check is fetched again. A cached file that is empty or that
// options.checkFile refuses is a WeightsError naming the URL, the reason and the command that
// fetches it again (`fixres weights fetch --refresh URL`). Otherwise the file is fetched into
// `.<name>.part` beside it under an exclusive lock on that file (flock: a second process waits
// for the first, then uses its file), fsynced, checked (size against Content-Length or
// Content-Range, not empty, options.checkFile, SHA-256 when known) and renamed into place, over
// the cached file with options.refresh. A `.part` left by a process that died (kill -9, a crash)
// is resumed with an HTTP Range request (with options.refresh it is started again); a server that
// answers 200 instead of 206 sends the whole file again. Redirects are followed (http and https
// only).
//
// Errors: HTTP errors (404, ...), a connection refused or timed out, a transfer that stalls or
// ends early, an empty body or one options.checkFile refuses (saying what the server sent: an
// HTML page, N bytes, the check's reason), a wrong checksum: WeightsError naming the URL and the
// cause (status, expected and actual digests, bytes received of expected). A cache that cannot be
// written: OutputError. In each case the temporary is removed (and the folders made for it, when
// left empty), and a file cached before is left as it was. A stop signal (SIGINT/SIGTERM with the
// stop handlers installed) ends the transfer and keeps the `.part` for the next run to resume:
// InternalError saying so.
std::string fetchToCache(const RemoteFile& file, const DownloadOptions& options);

}  // namespace fixres
