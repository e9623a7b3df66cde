// Remote weight files: the URL#sha256= spec and the cache path of a URL (libcurl's URL parser).
#include "fixres/common/RemoteFile.h"

#if FIXRES_WITH_CURL
#include <curl/curl.h>
#endif

#include <cctype>
#include <memory>
#include <mutex>

#include "fixres/common/Error.h"
#include "fixres/common/Sha256.h"

namespace fixres {
namespace {

bool isHex(const std::string& s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// One component of a cache path: [A-Za-z0-9._+-] only, never starting with a dot.
std::string safeName(const std::string& part) {
  std::string out;
  for (char c : part) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+';
    out += ok ? c : '_';
  }
  if (!out.empty() && out[0] == '.') out[0] = '_';
  return out;
}

#if FIXRES_WITH_CURL
struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
#endif

}  // namespace

namespace detail {

void initCurl() {
#if FIXRES_WITH_CURL
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
#endif
}

std::string toLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace detail

bool isRemoteFile(const std::string& path) {
  return path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0;
}

RemoteFile parseRemoteFile(const std::string& spec) {
  RemoteFile f;
  const auto hash = spec.find('#');
  f.url = spec.substr(0, hash);
  if (hash == std::string::npos) return f;
  const std::string fragment = spec.substr(hash + 1);
  const std::string key = "sha256=";
  const std::string hex = fragment.rfind(key, 0) == 0 ? fragment.substr(key.size()) : "";
  FIXRES_CHECK(hex.size() >= 8 && hex.size() <= 64 && isHex(hex), UsageError, "'", spec,
               "': the part after '#' must be sha256= and 8 to 64 hexadecimal digits (the "
               "file's SHA-256 or its start), got '#",
               fragment, "'");
  f.sha256 = detail::toLower(hex);
  return f;
}

std::string remoteFileSpec(const RemoteFile& file) {
  return file.sha256.empty() ? file.url : file.url + "#sha256=" + file.sha256;
}

std::string cachePathFor(const std::string& cacheDir, const std::string& url) {
#if !FIXRES_WITH_CURL
  FIXRES_FAIL(UsageError, "cannot fetch '", url,
              "': this build of fixres has no downloader (built without libcurl); fetch the file "
              "elsewhere and give its path");
#else
  detail::initCurl();
  std::unique_ptr<CURLU, CurlUrlDeleter> u(curl_url());
  FIXRES_CHECK(u != nullptr, InternalError, "cannot start libcurl");
  const CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0);
  FIXRES_CHECK(rc == CURLUE_OK, UsageError, "'", url, "' is not a URL fixres can fetch (",
               curl_url_strerror(rc), ")");
  auto part = [&u](CURLUPart which) {
    char* text = nullptr;
    std::string out;
    if (curl_url_get(u.get(), which, &text, 0) == CURLUE_OK && text) out = text;
    curl_free(text);
    return out;
  };
  std::string host = safeName(detail::toLower(part(CURLUPART_HOST)));
  const std::string port = part(CURLUPART_PORT);
  if (!port.empty()) host += "_" + safeName(port);
  const std::string path = part(CURLUPART_PATH);
  FIXRES_CHECK(!host.empty() && !path.empty() && path.back() != '/', UsageError, "'", url,
               "' names no file (the URL's path must end in a file name)");
  std::string out = cacheDir + "/" + host, name;
  size_t from = 0;
  while (from < path.size()) {
    auto to = path.find('/', from);
    if (to == std::string::npos) to = path.size();
    const std::string piece = path.substr(from, to - from);
    from = to + 1;
    if (piece.empty() || piece == ".") continue;
    FIXRES_CHECK(piece != "..", UsageError, "'", url, "': '..' in the path of a URL to fetch");
    if (!name.empty()) out += "/" + name;
    name = safeName(piece);
  }
  // Sanitising maps distinct URLs to one name (a~b and a_b, a%20b and a_20b, queries): the hash
  // of the whole URL keeps them apart. It goes before the extension, which stays the file's.
  const auto dot = name.rfind('.');
  const size_t stemEnd = dot == std::string::npos || dot == 0 ? name.size() : dot;
  return out + "/" + name.substr(0, stemEnd) + "-" + sha256Hex(url).substr(0, 16) +
         name.substr(stemEnd);
#endif
}

std::string cacheUrlFile(const std::string& cachePath) {
  return cachePath + ".url";
}

}  // namespace fixres
