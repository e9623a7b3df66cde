// The names nearest a mistyped one, for "did you mean" in messages: an edit distance (insertions,
// deletions, substitutions and swaps of neighbours) between the names spelt alike, case and '_' /
// '-' aside, so that --learning_rate is 0 from --learning-rate.
#pragma once

#include <string>
#include <vector>

namespace fixres {

// The distance between `a` and `b` after both are lower-cased with '_' read as '-'.
size_t nameDistance(const std::string& a, const std::string& b);

// Up to `count` of `names`, nearest `word` first (the earlier of equals), only those within
// `maxDistance` (none: any).
std::vector<std::string> nearestNames(const std::string& word,
                                      const std::vector<std::string>& names, size_t count,
                                      size_t maxDistance = static_cast<size_t>(-1));

// "a, b or c"
std::string orList(const std::vector<std::string>& names);

}  // namespace fixres
