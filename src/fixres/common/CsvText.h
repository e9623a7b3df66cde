// Text written as one CSV field the way Python's csv module reads it back.
#pragma once

#include <string>

#include "fixres/common/JsonInput.h"

namespace fixres {

// s as is, or double-quoted (inner quotes doubled) when it holds a comma, a quote or a line end;
// bytes that are not UTF-8 replaced by U+FFFD (common/JsonInput.h).
inline std::string csvField(const std::string& text) {
  const std::string s = validUtf8(text);
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace fixres
