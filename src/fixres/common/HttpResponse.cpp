// HTTP response heads and bodies as the downloader sees them.
#include "fixres/common/HttpResponse.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fixres/common/RemoteFile.h"  // detail::toLower

namespace fixres {
namespace {

// The value of header `line` when its name is `name` (lower case, with the colon), else false.
bool headerValue(const std::string& line, const std::string& name, std::string& value) {
  if (detail::toLower(line.substr(0, name.size())) != name) return false;
  value = line.substr(std::min(line.size(), line.find_first_not_of(" \t", name.size())));
  return true;
}

}  // namespace

void HttpResponseHead::addLine(std::string line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    statusLine = line;
    contentRange.clear();
    contentType.clear();
    return;
  }
  if (!headerValue(line, "content-range:", contentRange))
    headerValue(line, "content-type:", contentType);
}

std::string HttpResponseHead::statusText(long status) const {
  const auto space = statusLine.find(' ');
  return space == std::string::npos ? "HTTP " + std::to_string(status)
                                    : "HTTP " + statusLine.substr(space + 1);
}

bool parseContentRange(const std::string& text, int64_t& start, int64_t& total) {
  long long s = 0, e = 0;
  char totalText[32] = {0};
  if (std::sscanf(text.c_str(), "bytes %lld-%lld/%31s", &s, &e, totalText) != 3) return false;
  start = s;
  total = std::strcmp(totalText, "*") == 0 ? -1 : std::atoll(totalText);
  return true;
}

std::string describeBody(const std::string& head, const std::string& contentType, int64_t size) {
  std::string start = detail::toLower(head);
  start.erase(0, std::min(start.size(), start.find_first_not_of(" \t\r\n\xef\xbb\xbf")));
  const bool html = detail::toLower(contentType).find("html") != std::string::npos ||
                    start.rfind("<!doctype html", 0) == 0 || start.rfind("<html", 0) == 0;
  const std::string bytes = std::to_string(size) + " bytes";
  if (html) return "an HTML page (" + bytes + (contentType.empty() ? "" : ", " + contentType) + ")";
  return contentType.empty() ? bytes : bytes + " (" + contentType + ")";
}

}  // namespace fixres
