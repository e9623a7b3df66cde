// Named choices: every option that picks one of a few behaviours is an enum with one table of
// (name, value) pairs. The same table parses the flag (and lists the valid values in --help),
// writes config.json and reads it back. The first name of a value is its canonical spelling;
// later ones are accepted aliases.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres {

template <typename E>
struct ChoiceTable {
  std::string noun;  // what a value is, for messages: "transform", "precision"
  std::vector<std::pair<std::string, E>> entries;
};

// Canonical names in table order (aliases too with `withAliases`).
template <typename E>
std::vector<std::string> choiceNames(const ChoiceTable<E>& table, bool withAliases = false) {
  std::vector<std::string> names;
  const auto& e = table.entries;
  for (size_t i = 0; i < e.size(); ++i) {
    bool alias = false;
    for (size_t j = 0; j < i; ++j) alias = alias || e[j].second == e[i].second;
    if (withAliases || !alias) names.push_back(e[i].first);
  }
  return names;
}

// "a, b, c"
inline std::string joinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// "unknown transform 'x' (valid: torch, full, ...)", or "" when `text` names a value.
template <typename E>
std::string choiceError(const ChoiceTable<E>& table, const std::string& text) {
  for (const auto& entry : table.entries)
    if (entry.first == text) return "";
  return "unknown " + table.noun + " '" + text + "' (valid: " + joinNames(choiceNames(table)) + ")";
}

// The value named `text`; UsageError "<where>: unknown <noun> 'text' (valid: ...)" otherwise.
template <typename E>
E parseChoice(const ChoiceTable<E>& table, const std::string& text, const std::string& where) {
  for (const auto& [name, value] : table.entries)
    if (name == text) return value;
  FIXRES_FAIL(UsageError, where, ": ", choiceError(table, text));
}

// The canonical name of `value`.
template <typename E>
const std::string& choiceName(const ChoiceTable<E>& table, E value) {
  for (const auto& entry : table.entries)
    if (entry.second == value) return entry.first;
  FIXRES_FAIL(InternalError, "a ", table.noun, " value has no name");
}

}  // namespace fixres
