// Strict reads of JSON metadata fields (plans, program plans): the value
// must already have the field's type and fit its range. nlohmann's get<T>()
// would convert 1e300 to an integer (undefined behaviour), -1 to an unsigned
// and 2.5 to 2; here each of those is a wrong type.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace loom::plan {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

/// Reads `j` into `*out`; false when `j` is not exactly of T's kind and range.
template <class T, class Json>
bool read_strict(const Json& j, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return false;
    *out = j.template get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (j.is_number_unsigned()) {
      const uint64_t v = j.template get<uint64_t>();
      if (v > uint64_t(std::numeric_limits<T>::max())) return false;
      *out = T(v);
    } else if (j.is_number_integer()) {
      const int64_t v = j.template get<int64_t>();
      if (v < int64_t(std::numeric_limits<T>::min()) ||
          (v > 0 && uint64_t(v) > uint64_t(std::numeric_limits<T>::max())))
        return false;
      *out = T(v);
    } else {
      return false;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) return false;
    const double v = j.template get<double>();
    if (!std::isfinite(v)) return false;
    *out = T(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) return false;
    *out = j.template get<std::string>();
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) return false;
    T v;
    v.reserve(j.size());
    for (const auto& e : j) {
      typename T::value_type x{};
      if (!read_strict(e, &x)) return false;
      v.push_back(std::move(x));
    }
    *out = std::move(v);
  } else {
    static_assert(std::is_same_v<T, Json>, "read_strict: unsupported field type");
    *out = j;
  }
  return true;
}

/// Required metadata fields read strictly, naming the one that is wrong
/// ("PATH: CTX: missing field 'KEY'"). The first error is kept and later
/// gets do nothing, so a run of gets is checked once at its end.
struct Fields {
  const std::string& path;
  std::optional<Error> err;

  template <class T, class Json>
  bool get(const Json& j, const std::string& ctx, const char* key, T* out) {
    if (err) return false;
    const std::string where = path + ": " + ctx;
    if (!j.is_object()) {
      err = make_error(where, "expected an object");
      return false;
    }
    auto it = j.find(key);
    if (it == j.end()) {
      err = make_error(where, std::string("missing field '") + key + "'");
      return false;
    }
    if (!read_strict(*it, out)) {
      err = make_error(where, std::string("field '") + key + "' has the wrong type or is out of range");
      return false;
    }
    return true;
  }
};

}  // namespace loom::plan
