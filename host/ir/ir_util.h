// Private helpers of loom_ir: the operator property table, error locations
// and the portable PRNG behind seeded initializers and random inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace loom::ir::detail {

/// Static properties of each JSON op name. "matmul" is gemm without bias, so
/// two names share one OpKind; the first row of a kind gives op_name().
struct OpInfo {
  const char* name;
  OpKind kind;
  int min_inputs, max_inputs;
  const char* attrs;  // space-separated attribute names the op accepts
};

inline constexpr OpInfo kOps[] = {
    {"conv2d", OpKind::Conv2d, 2, 3, "kernel strides pads dilations groups activation round_even"},
    {"gemm", OpKind::Gemm, 2, 3, "groups trans_b activation round_even"},
    {"matmul", OpKind::Gemm, 2, 2, "groups trans_b activation round_even"},
    {"relu", OpKind::Relu, 1, 1, ""},
    {"clip", OpKind::Clip, 1, 1, "min max"},
    {"add", OpKind::Add, 2, 2, "activation"},
    {"maxpool", OpKind::MaxPool, 1, 1, "kernel strides pads dilations"},
    {"avgpool", OpKind::AvgPool, 1, 1, "kernel strides pads dilations count_include_pad"},
    {"globalavgpool", OpKind::GlobalAvgPool, 1, 1, ""},
    {"reshape", OpKind::Reshape, 1, 1, "shape"},
    {"flatten", OpKind::Flatten, 1, 1, ""},
    {"mul", OpKind::Mul, 2, 2, "activation"},
    {"transpose", OpKind::Transpose, 1, 1, "perm"},
    {"lut", OpKind::Lut, 2, 2, ""},
    {"softmax", OpKind::Softmax, 1, 1, ""},
    {"layernorm", OpKind::LayerNorm, 2, 2, "eps"},
    {"concat", OpKind::Concat, 1, 256, "axis"},
    {"slice", OpKind::Slice, 1, 1, "starts ends"},
};

inline const OpInfo* find_op(std::string_view name) {
  for (const auto& o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

inline bool op_has_attr(const OpInfo& o, std::string_view attr) {
  std::string_view list = o.attrs;
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    if (list.substr(0, sp) == attr) return true;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return false;
}

/// SplitMix64 (Steele, Lea, Flood 2014): fixed arithmetic, so seeded
/// weights are identical on every platform and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform-enough integer in [lo, hi]; the modulo bias is irrelevant for
  /// test weights and keeps the definition trivial to reproduce elsewhere.
  int64_t in_range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }

 private:
  uint64_t state_;
};

inline std::string join_where(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + ": " + b;
}
inline std::string node_where(const Graph& g, const Node& n) { return join_where(g.source, "node '" + n.name + "'"); }
inline std::string field_where(const std::string& where, const std::string& field) {
  return join_where(where, "field '" + field + "'");
}
inline std::string tensor_where(const Graph& g, const std::string& t) {
  return join_where(g.source, "tensor '" + t + "'");
}

/// Formats a real value for messages (shortest round-trip is overkill; 6
/// significant digits identify a scale).
std::string fmt_real(double v);

/// Rounds a real clip bound (half away from zero) into an int8 output
/// domain; saturating before the cast keeps huge or infinite bounds defined.
inline int32_t real_to_q(double r, double scale, int32_t zero_point) {
  const double q = r / scale;
  const double d = std::isnan(q) ? 0.0 : std::clamp(q, -1e12, 1e12);
  return int32_t(std::clamp<int64_t>(int64_t(std::round(d)) + zero_point, -128, 127));
}

}  // namespace loom::ir::detail
