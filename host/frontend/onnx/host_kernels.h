// Internals shared by the host kernels (host_ops.cc: quantized, numeric and
// pooling ops; host_layout.cc: layout, resize and per-channel ops): the
// call context and numpy broadcasting helpers.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"

namespace loom::onnxfe::hostk {

using Env = std::map<std::string, Value>;

struct Ctx {
  const Model& m;
  const Node& n;
  Env& env;
  std::string where() const { return m.where(n); }
  Error err(const std::string& field, const std::string& what) const {
    return make_error(where() + (field.empty() ? "" : ": " + field), what);
  }
  bool has(size_t k) const { return !n.in(k).empty(); }
  const Value& in(size_t k) const { return env.at(n.in(k)); }
  void out(size_t k, Value v) const {
    if (k < n.outputs.size() && !n.outputs[k].empty()) env[n.outputs[k]] = std::move(v);
  }
};

inline std::vector<int64_t> strides_of(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

inline int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

inline int64_t saturate(int64_t v, int32_t type) {
  int64_t lo, hi;
  elem_range(type, &lo, &hi);
  return std::clamp(v, lo, hi);
}

/// An integral double as int64, defined for every input: clamped to +-1e18
/// (beyond every integer type's range but int64's own), NaN as 0.
inline int64_t to_int64(double v) { return std::isnan(v) ? 0 : int64_t(std::clamp(v, -1e18, 1e18)); }

// Numpy broadcasting of two shapes; false when incompatible.
inline bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[k] = std::max(da, db);
  }
  return true;
}

// Flat index into `s` (broadcast to `out`) for each flat index of `out`.
inline std::vector<int64_t> broadcast_index(const std::vector<int64_t>& s, const std::vector<int64_t>& out) {
  const auto ost = strides_of(out);
  std::vector<int64_t> st(out.size(), 0);
  const auto sst = strides_of(s);
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t o = k + out.size() - s.size();
    st[o] = s[k] == 1 ? 0 : sst[k];
  }
  int64_t n = 1;
  for (auto d : out) n *= d;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, j = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t c = rem / ost[k];
      rem %= ost[k];
      j += c * st[k];
    }
    idx[size_t(f)] = j;
  }
  return idx;
}

using Fn = std::function<Status(const Ctx&)>;

/// The kernels of host_layout.cc, by op key ("Concat", ...).
const std::map<std::string, Fn>& layout_ops();

}  // namespace loom::onnxfe::hostk
