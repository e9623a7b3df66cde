// Nearest names (Nearest.h): the optimal-string-alignment distance, one row at a time.
#include "fixres/common/Nearest.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace fixres {
namespace {

std::string spelling(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

size_t nameDistance(const std::string& a0, const std::string& b0) {
  const std::string a = spelling(a0), b = spelling(b0);
  // d[i][j] over three rows: i-2, i-1 and i.
  std::vector<size_t> older(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], older[j - 2] + 1);
    }
    std::swap(older, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> nearestNames(const std::string& word,
                                      const std::vector<std::string>& names, size_t count,
                                      size_t maxDistance) {
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, index)
  for (size_t i = 0; i < names.size(); ++i) {
    const size_t d = nameDistance(word, names[i]);
    if (d <= maxDistance) scored.emplace_back(d, i);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < scored.size() && out.size() < count; ++k) {
    const std::string& n = names[scored[k].second];
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string orList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace fixres
