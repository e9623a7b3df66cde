// Numbers as the shortest text that reads back to the same value (std::to_chars), and the item of
// a list of numbers as a reader takes it.
#pragma once

#include <charconv>
#include <string>

namespace fixres {

// A float32 as the shortest decimal that reads back to it ("0.485", not 0.48500001430511475).
inline std::string shortestText(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A double as the shortest decimal that reads back to it.
inline std::string shortestText(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The same as a double holding that decimal: what JSON writers print as that text.
inline double shortestDouble(float v) {
  return std::stod(shortestText(v));
}

// `text` without its leading and trailing spaces and tabs: a list's item ("0.875, 1.0") as read.
inline std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace fixres
