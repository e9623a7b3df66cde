// What the downloader (Download.h) reads of an HTTP response: the status line, the Content-Range
// and Content-Type headers, and what a body looks like, for messages.
#pragma once

#include <cstdint>
#include <string>

namespace fixres {

// The head of the last response of a transfer (each redirect has its own).
struct HttpResponseHead {
  std::string statusLine;    // "HTTP/1.1 200 OK"; "" before the first
  std::string contentRange;  // its Content-Range header ("bytes 0-9/10"), "" when none
  std::string contentType;   // its Content-Type header ("text/html; charset=utf-8"), "" when none

  // Takes one header line, with or without its CR LF; a status line starts a new response.
  void addLine(std::string line);
  // "HTTP 404 Not Found" for "HTTP/1.1 404 Not Found"; "HTTP <status>" without a status line.
  std::string statusText(long status) const;
};

// "bytes START-END/TOTAL" -> START and TOTAL (-1 for "*"); false when it is not that.
bool parseContentRange(const std::string& text, int64_t& start, int64_t& total);

// A body of `size` bytes starting with `head`, for messages: "an HTML page (N bytes, TYPE)" when
// contentType names HTML or head starts (after blanks and a byte-order mark) with "<!doctype
// html" or "<html" (any case); else "N bytes (TYPE)", or "N bytes" without a type.
std::string describeBody(const std::string& head, const std::string& contentType, int64_t size);

}  // namespace fixres
