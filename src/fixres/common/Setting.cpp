// Range checks and descriptions of setting rows.
#include "fixres/common/Setting.h"

#include <algorithm>
#include <charconv>

#include "fixres/common/Error.h"

namespace fixres {
namespace {

// Whole numbers as integers ("1048576"), others as the shortest text that reads back ("0.99").
std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// "[8, 4096]", "(0, 1024]", ">= 1", "> 0".
std::string interval(const Range& r) {
  if (std::isinf(r.hi)) return (r.loOpen ? "> " : ">= ") + number(r.lo);
  return (r.loOpen ? "(" : "[") + number(r.lo) + ", " + number(r.hi) + (r.hiOpen ? ")" : "]");
}

}  // namespace

bool Range::contains(double v) const {
  if (hasSpecial && v == special) return true;
  if (kind == Kind::kAny) return true;
  if (!std::isfinite(v)) return false;
  if (kind == Kind::kInteger && v != std::floor(v)) return false;
  return (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
}

std::string Range::describe() const {
  if (kind == Kind::kAny) return "";
  const std::string in = std::isinf(hi) ? " " : " in ";
  std::string s =
      (kind == Kind::kInteger ? "an integer" : "a finite number") + in + interval(*this);
  if (hasSpecial) s += std::string(" (or ") + number(special) + ": " + specialMeaning + ")";
  return s;
}

std::string Range::brief() const {
  if (kind == Kind::kAny) return "";
  return (hasSpecial ? number(special) + " or " : std::string()) + interval(*this);
}

std::string Setting::flag() const {
  const std::string names = flags;
  if (names.empty()) return key;
  return names.substr(0, names.find(','));
}

std::vector<std::string> Setting::flagNames() const {
  std::vector<std::string> out;
  const std::string names = flags;
  for (size_t at = 0; !names.empty() && at <= names.size();) {
    const size_t end = std::min(names.find(',', at), names.size());
    out.push_back(names.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

namespace {
// Whether comma-separated `list` names `command`.
bool lists(const char* list, const std::string& command) {
  const std::string names = list;
  size_t at = 0;
  while (at <= names.size()) {
    const size_t end = std::min(names.find(',', at), names.size());
    if (names.compare(at, end - at, command) == 0 && end - at == command.size()) return true;
    at = end + 1;
  }
  return false;
}
}  // namespace

bool Setting::offeredTo(const std::string& command) const {
  return flags[0] != '\0' && (commands[0] == '\0' || lists(commands, command));
}

std::string Setting::helpFor(const std::string& command) const {
  for (const CommandHelp* h = perCommand; h != nullptr && h->commands != nullptr; ++h) {
    if (lists(h->commands, command)) return h->help;
  }
  return help;
}

void checkSetting(const Setting& s, double v) {
  FIXRES_CHECK(s.range.contains(v), UsageError, s.flag(), " must be ", s.range.describe(), ", got ",
               v);
}

}  // namespace fixres
