// Exit-code mapping and message folding for the top-level catch.
#include "fixres/common/Error.h"

#include <new>

namespace fixres {

ExitCode exitCodeOf(const std::exception& e) {
  if (const auto* fe = dynamic_cast<const Error*>(&e)) return fe->code();
  return ExitCode::kOther;
}

std::string oneLine(const std::string& message) {
  std::string text = message;
  // LibTorch (c10::Error) appends "Exception raised from ..." and a frame list: not for users.
  for (const char* marker : {"\nException raised from", "Exception raised from "}) {
    auto pos = text.find(marker);
    if (pos != std::string::npos) text.erase(pos);
  }
  std::string out;
  out.reserve(text.size());
  bool pendingBreak = false;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      pendingBreak = !out.empty();
      continue;
    }
    if (pendingBreak) {
      out += "; ";
      pendingBreak = false;
    }
    out += c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

}  // namespace fixres
