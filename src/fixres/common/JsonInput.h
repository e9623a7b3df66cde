// JSON that came from a file (a model folder's config.json, a safetensors header, a checkpoint's
// stored config, a metrics log line): parsed with its nesting bounded before any of it is used,
// and shown in messages only as a bounded excerpt, so that no file can exhaust the stack or flood
// a message. And JSON that fixres writes: text that is not UTF-8 (a Latin-1 file name, a decoder
// message echoing raw bytes) has each invalid byte replaced by U+FFFD instead of failing the
// write.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <string>

namespace fixres {

// Deeper than any file fixres reads needs (timm's config.json: 3 levels).
inline constexpr int kMaxJsonDepth = 64;

namespace detail {
struct JsonTooDeep {};
}  // namespace detail

// Parses `text` into `out` (nlohmann::json or ordered_json); false with `why` ("nested deeper
// than 64 levels", or the parser's message) when it is not JSON or nests deeper than
// kMaxJsonDepth. Never throws for bad text.
template <typename Json>
bool parseJsonInput(const std::string& text, Json* out, std::string* why) {
  // The parser itself is iterative; the callback stops it at the first level too deep, before
  // that value exists.
  auto bounded = [](int depth, typename Json::parse_event_t event, Json&) {
    if (depth >= kMaxJsonDepth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
      throw detail::JsonTooDeep{};
    return true;
  };
  try {
    *out = Json::parse(text, bounded);
    return true;
  } catch (const detail::JsonTooDeep&) {
    *why = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  } catch (const typename Json::exception& e) {
    *why = e.what();
  }
  *out = Json();
  return false;
}

// `v` as JSON text, cut to at most `limit` characters ("..." in place of the rest), for messages;
// bytes that are not UTF-8 replaced.
template <typename Json>
std::string jsonExcerpt(const Json& v, size_t limit = 80) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > limit) text = text.substr(0, limit > 3 ? limit - 3 : 0) + "...";
  return text;
}

// `v` as JSON text (`indent` < 0: one line), any string that is not UTF-8 repaired as above.
template <typename Json>
std::string jsonText(const Json& v, int indent = -1) {
  return v.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// `v` with every floating-point number rounded to 12 significant digits, for results read by
// people and scripts: a top-1 of 11 in 20 images is 55, not 55.00000000000001 (the rounding is
// 5e-13 of the value, far below what any of them resolves).
template <typename Json>
Json roundedNumbers(Json v) {
  if (v.is_number_float()) {
    const double x = v.template get<double>();
    if (!std::isfinite(x) || x == 0) return v;
    const double scale =
        std::pow(10.0, 11 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
    const double r = std::round(x * scale) / scale;
    return std::isfinite(r) ? Json(r) : v;
  }
  if (v.is_structured())
    for (auto& item : v) item = roundedNumbers(item);
  return v;
}

// `s` with every byte that does not start or continue a valid UTF-8 sequence replaced by U+FFFD
// (as jsonText does it): for CSV and other text outputs.
inline std::string validUtf8(const std::string& s) {
  bool ascii = true;
  for (const char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return s;
  const std::string quoted = jsonText(nlohmann::json(s));
  return nlohmann::json::parse(quoted).template get<std::string>();
}

}  // namespace fixres
