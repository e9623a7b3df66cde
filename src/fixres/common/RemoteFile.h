// A weight file to fetch over HTTP(S): its URL with the SHA-256 it must have, when known (the
// "URL#sha256=HEX" of --weight-path), and where the cache of Download.h keeps it.
#pragma once

#include <string>

namespace fixres {

// True for "http://..." and "https://..." (what --weight-path fetches rather than opens).
bool isRemoteFile(const std::string& path);

// A file to fetch: "URL" or "URL#sha256=HEX", HEX being the file's SHA-256 (64 hexadecimal
// digits) or its first 8 to 63 digits (timm's file names carry such a prefix: -827b6e33.pth).
struct RemoteFile {
  std::string url;     // without the fragment
  std::string sha256;  // lower case; "" when unknown
};
// UsageError naming the text for a fragment other than "#sha256=" and 8 to 64 hex digits.
RemoteFile parseRemoteFile(const std::string& spec);
// "URL" or "URL#sha256=HEX": the inverse of parseRemoteFile.
std::string remoteFileSpec(const RemoteFile& file);

// Where `url` is kept under `cacheDir`: `<cacheDir>/<host>[_<port>]/<folders of the URL's
// path>/<stem>-<hash><extension>`, each part reduced to [A-Za-z0-9._+-] (other bytes become '_',
// a leading '.' becomes '_', so no cached name starts with a dot: the dot names are the cache's
// own temporaries); <stem> and <extension> (from its last '.', if any) are those of the last path
// segment, and <hash> is the first 16 hexadecimal digits of the SHA-256 of the whole `url` (query
// included), so two URLs never share a file even where their readable parts sanitise alike.
// UsageError for a URL that names no file (no path, a path ending in '/') or that curl cannot
// parse.
std::string cachePathFor(const std::string& cacheDir, const std::string& url);
// The file beside a cache entry that records its URL (one line): `<cachePath>.url`.
std::string cacheUrlFile(const std::string& cachePath);

namespace detail {
// For Download.cpp: libcurl's global initialisation, once per process (cachePathFor parses URLs
// with libcurl), and ASCII lower case.
void initCurl();
std::string toLower(std::string s);
}  // namespace detail

}  // namespace fixres
