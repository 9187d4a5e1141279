// Errors as values at library boundaries: Status and Expected<T> carry where
// (file, node, field) and what went wrong, printed as one line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace loom {

struct Error {
  std::string where;  // e.g. "graph.json: node 'conv1': field 'strides'"
  std::string what;   // e.g. "expected 2 values, got 3"
  std::string str() const { return where.empty() ? what : where + ": " + what; }
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

/// An address or register value as messages print it: "0x1f40".
inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T v) : v_(std::move(v)) {}        // NOLINT: implicit by design
  Expected(Error e) : v_(std::move(e)) {}    // NOLINT
  Expected(Status s) : v_(s.error()) {}      // NOLINT: only from a failed Status
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

#define LOOM_TRY(expr)                \
  do {                                \
    ::loom::Status _s = (expr);       \
    if (!_s.is_ok()) return _s.error(); \
  } while (0)
