// Strict numeric parsing: the whole text must be the number (no sign of a
// prefix parse, no leading or trailing blanks, no hex, no inf or nan), or
// the caller gets std::nullopt and reports the field in its own words.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace loom {

inline std::optional<int64_t> parse_int64(std::string_view s) {
  int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') {  // "+5" is 5; "+-5" and "+ 5" are errors
    ++b;
    if (b == e || *b < '0' || *b > '9') return std::nullopt;
  }
  const auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') {
    ++b;
    if (b == e || !((*b >= '0' && *b <= '9') || *b == '.')) return std::nullopt;
  }
  const auto r = std::from_chars(b, e, v, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != e || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace loom
