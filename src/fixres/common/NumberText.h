// Numbers as the shortest text that reads back to the same value (std::to_chars).
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

}  // namespace fixres
