// Errors as values at library boundaries: Status and Expected<T> carry where
// (file, node, field) and what went wrong, printed as one line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace loom {

/// `s` as one line of at most `max` bytes: line breaks and tabs become
/// spaces, other control characters '?', trailing blanks go, and a longer
/// text ends in "...".
inline std::string one_line(std::string_view s, size_t max = 1024) {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    else if (uint8_t(c) < 0x20 || c == 0x7f)
      c = '?';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (s.size() > max) out += "...";
  return out;
}

struct Error {
  std::string where;  // e.g. "graph.json: node 'conv1': field 'strides'"
  std::string what;   // e.g. "expected 2 values, got 3"
  /// One line whatever names from the input hold: control characters become
  /// '?', and the text stops at 4 KiB.
  std::string str() const { return one_line(where.empty() ? what : where + ": " + what, 4096); }
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)) {}  // NOLINT: implicit by design
  static Status ok() { return {}; }
  bool is_ok() const { return !err_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Error& error() const { return *err_; }
  std::string str() const { return err_ ? err_->str() : "ok"; }
  /// Prefixes the location (outermost context first).
  Status& context(const std::string& where) {
    if (err_) err_->where = err_->where.empty() ? where : where + ": " + err_->where;
    return *this;
  }

 private:
  std::optional<Error> err_;
};

inline Error make_error(std::string where, std::string what) { return Error{std::move(where), std::move(what)}; }

/// Text quoted from input in a message, clipped to `max` printable
/// characters (others become '?') so that a corrupt field cannot produce a
/// multi-line or megabyte-long error line.
inline std::string excerpt(std::string_view s, size_t max = 60) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

/// A library exception's message as one line, without nlohmann's
/// "[json.exception.parse_error.101] " tag.
inline std::string exception_text(const char* what) {
  std::string_view w = what ? what : "unknown error";
  if (w.rfind("[json.exception", 0) == 0)
    if (const size_t close = w.find("] "); close != std::string_view::npos) w.remove_prefix(close + 2);
  return one_line(w, 300);
}

/// An address or register value as messages print it: "0x1f40".
inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T v) : v_(std::move(v)) {}      // NOLINT: implicit by design
  Expected(Error e) : v_(std::move(e)) {}  // NOLINT
  Expected(Status s) : v_(s.error()) {}    // NOLINT: only from a failed Status
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return is_ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace loom

#define LOOM_TRY(expr)                  \
  do {                                  \
    ::loom::Status _s = (expr);         \
    if (!_s.is_ok()) return _s.error(); \
  } while (0)
