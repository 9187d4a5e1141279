// Graph validation: tensor and quantization checks, shape inference, and the
// topological order every later pass and the reference rely on.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "ir/graph.h"
#include "ir/ir_util.h"
#include "ir/op_quant.h"

namespace loom::ir {

using detail::field_where;
using detail::fmt_real;
using detail::join_where;
using detail::node_where;
using detail::tensor_where;

namespace {

Status check_tensor(const Graph& g, const std::string& key, TensorInfo& t) {
  const std::string where = tensor_where(g, key);
  if (t.name.empty()) t.name = key;
  if (t.name != key) return make_error(field_where(where, "name"), "is '" + t.name + "', expected '" + key + "'");
  if (t.dtype != DType::I8 && t.dtype != DType::I32) {
    return make_error(field_where(where, "dtype"),
                      std::string(dtype_name(t.dtype)) + " is not supported in graphs (int8 tensors, int32 bias)");
  }
  if (!t.is_const && t.dtype != DType::I8) {
    return make_error(field_where(where, "dtype"), "activations must be int8 (only constants may be int32)");
  }
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 1) {
      return make_error(field_where(where, "shape"),
                        "dimension " + std::to_string(i) + " is " + std::to_string(t.shape[i]) + "; dims must be >= 1");
    }
  }
  auto n = checked_numel(t.shape);
  if (!n) return make_error(field_where(where, "shape"), n.error().what);
  if (t.q.scale.empty()) return make_error(field_where(where, "scale"), "no scale given");
  for (double s : t.q.scale) {
    if (!(s > 0) || !std::isfinite(s)) {
      return make_error(field_where(where, "scale"), "scale " + fmt_real(s) + " must be positive and finite");
    }
  }
  if (!t.is_const && t.q.scale.size() != 1) {
    return make_error(field_where(where, "scale"), "activations take one scale, got " +
                                                       std::to_string(t.q.scale.size()) +
                                                       " (per-channel scales are for weights)");
  }
  if (t.dtype == DType::I8 && (t.q.zero_point < -128 || t.q.zero_point > 127)) {
    return make_error(field_where(where, "zero_point"),
                      std::to_string(t.q.zero_point) + " is outside the int8 range [-128, 127]");
  }
  if (t.dtype == DType::I32 && t.q.zero_point != 0) {
    return make_error(field_where(where, "zero_point"),
                      "int32 bias is added to the accumulator as is; zero_point must be 0");
  }
  if (t.is_const) {
    if (t.shape.empty()) return make_error(field_where(where, "shape"), "constants need a shape");
    if (t.data.dtype != t.dtype || t.data.shape != t.shape ||
        t.data.data.size() != uint64_t(*n) * dtype_size(t.dtype)) {
      return make_error(field_where(where, "data"), "constant data (" + std::string(dtype_name(t.data.dtype)) + " " +
                                                        shape_str(t.data.shape) + ") does not match " +
                                                        std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape));
    }
  }
  return {};
}

Status check_io(const Graph& g, const std::vector<std::string>& names, const char* field) {
  const std::string where = field_where(g.source, field);
  if (names.empty())
    return make_error(where, std::string("the graph needs at least one ") + (field[0] == 'i' ? "input" : "output"));
  std::set<std::string> seen;
  for (const auto& nm : names) {
    auto it = g.tensors.find(nm);
    if (it == g.tensors.end()) return make_error(where, "unknown tensor '" + nm + "' (not declared under 'tensors')");
    if (!seen.insert(nm).second) return make_error(where, "tensor '" + nm + "' is listed twice");
    if (it->second.is_const) return make_error(where, "tensor '" + nm + "' is a constant");
    if (field[0] == 'i' && it->second.shape.empty()) {
      return make_error(field_where(tensor_where(g, nm), "shape"), "required for graph inputs");
    }
  }
  return {};
}

// Kahn's algorithm, always taking the ready node that came first in the
// file, so the order is deterministic and stable for already-sorted graphs.
Status topo_sort(Graph& g, const std::map<std::string, size_t>& producer) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> indeg(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& in : g.nodes[i].inputs) {
      auto p = producer.find(in);
      if (p == producer.end()) continue;
      consumers[p->second].push_back(i);
      ++indeg[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<size_t> order;
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    done[i] = true;
    for (size_t c : consumers[i])
      if (--indeg[c] == 0) ready.push(c);
  }
  if (order.size() != n) {
    // Every unsorted node waits on an unsorted producer; walking producers
    // backwards from one must revisit a node, and that loop is the cycle.
    size_t cur = 0;
    while (done[cur]) ++cur;
    std::vector<size_t> path;
    std::vector<int> pos(n, -1);
    while (pos[cur] < 0) {
      pos[cur] = int(path.size());
      path.push_back(cur);
      for (const auto& in : g.nodes[cur].inputs) {
        auto p = producer.find(in);
        if (p != producer.end() && !done[p->second]) {
          cur = p->second;
          break;
        }
      }
    }
    std::vector<size_t> cycle(path.begin() + pos[cur], path.end());
    std::reverse(cycle.begin(), cycle.end());
    std::string text;
    for (size_t i : cycle) text += "'" + g.nodes[i].name + "' -> ";
    text += "'" + g.nodes[cycle[0]].name + "'";
    return make_error(field_where(node_where(g, g.nodes[cycle[0]]), "inputs"), "the graph has a cycle: " + text);
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  return {};
}

struct ShapeCtx {
  const Graph& g;
  const Node& n;
  std::string where(const char* field) const { return field_where(node_where(g, n), field); }
  const TensorInfo& in(size_t i) const { return g.tensors.at(n.inputs[i]); }
  bool has(size_t i) const { return i < n.inputs.size() && !n.inputs[i].empty(); }

  Status rank(size_t i, size_t r, const char* layout) const {
    const TensorInfo& t = in(i);
    if (t.shape.size() != r) {
      return make_error(where("inputs"), "input " + std::to_string(i) + " '" + t.name + "' has shape " +
                                             shape_str(t.shape) + ", expected " + layout);
    }
    return {};
  }
  Status dtype(size_t i, DType want) const {
    const TensorInfo& t = in(i);
    if (t.dtype != want) {
      return make_error(where("inputs"), "input " + std::to_string(i) + " '" + t.name + "' is " +
                                             std::string(dtype_name(t.dtype)) + ", expected " +
                                             std::string(dtype_name(want)));
    }
    return {};
  }
  // Output size of a sliding window along one spatial axis.
  Status window(int64_t size, int64_t k, int64_t s, int64_t p0, int64_t p1, const char* axis, int64_t* out) const {
    if (k < 1) return make_error(where("kernel"), std::string(axis) + " kernel " + std::to_string(k) + " must be >= 1");
    if (s < 1)
      return make_error(where("strides"), std::string(axis) + " stride " + std::to_string(s) + " must be >= 1");
    if (p0 < 0 || p1 < 0 || p0 >= k || p1 >= k) {
      return make_error(where("pads"), std::string(axis) + " pads " + std::to_string(p0) + ", " + std::to_string(p1) +
                                           " must be in [0, kernel " + std::to_string(k) + ")");
    }
    if (size + p0 + p1 < k) {
      return make_error(where("kernel"), std::string(axis) + " kernel " + std::to_string(k) +
                                             " is larger than the padded input (" + std::to_string(size + p0 + p1) +
                                             ")");
    }
    *out = (size + p0 + p1 - k) / s + 1;
    return {};
  }
};

/// A 2-D convolution over NHWC: [N, OH, OW, M].
Status infer_conv(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  LOOM_TRY(c.rank(0, 4, "[N,H,W,C]"));
  LOOM_TRY(c.rank(1, 4, "[KH,KW,C/groups,M]"));
  const auto& x = c.in(0).shape;
  const auto& w = c.in(1).shape;
  if (a.groups < 1 || x[3] % a.groups != 0 || w[3] % a.groups != 0) {
    return make_error(c.where("groups"), std::to_string(a.groups) + " must be >= 1 and divide input channels " +
                                             std::to_string(x[3]) + " and output channels " + std::to_string(w[3]));
  }
  if (w[2] != x[3] / a.groups) {
    return make_error(c.where("inputs"), "weight '" + c.in(1).name + "' " + shape_str(w) + " has " +
                                             std::to_string(w[2]) + " input channels per group, input '" +
                                             c.in(0).name + "' " + shape_str(x) + " with groups " +
                                             std::to_string(a.groups) + " needs " + std::to_string(x[3] / a.groups));
  }
  if (a.kernel_h != w[0] || a.kernel_w != w[1]) {
    return make_error(c.where("kernel"), "[" + std::to_string(a.kernel_h) + "," + std::to_string(a.kernel_w) +
                                             "] does not match weight '" + c.in(1).name + "' " + shape_str(w));
  }
  if (c.has(2)) {
    LOOM_TRY(c.rank(2, 1, "[M]"));
    if (c.in(2).shape[0] != w[3]) {
      return make_error(c.where("inputs"), "bias '" + c.in(2).name + "' " + shape_str(c.in(2).shape) +
                                               " does not match " + std::to_string(w[3]) + " output channels");
    }
  }
  int64_t oh = 0, ow = 0;
  LOOM_TRY(c.window(x[1], w[0], a.stride_h, a.pad_top, a.pad_bottom, "height", &oh));
  LOOM_TRY(c.window(x[2], w[1], a.stride_w, a.pad_left, a.pad_right, "width", &ow));
  *out = {x[0], oh, ow, w[3]};
  return {};
}

/// A GEMM, plain [M,K] x [K,N] or grouped [M,G*K] x [G,K,N]; with trans_b
/// b is given as its transpose, [N,K] or [G,N,K].
Status infer_gemm(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  const size_t kd = a.trans_b ? 1 : 0;  // b's K and N dims, counted from its last two
  if (a.groups != 1) {
    // Grouped: a [M, G*K], b [G, K, N] -> [M, G*N].
    if (a.groups < 1) return make_error(c.where("groups"), std::to_string(a.groups) + " must be >= 1");
    LOOM_TRY(c.rank(0, 2, "[M,G*K]"));
    LOOM_TRY(c.rank(1, 3, a.trans_b ? "[G,N,K]" : "[G,K,N]"));
    const auto& x = c.in(0).shape;
    const auto& w = c.in(1).shape;
    const int64_t K = w[1 + kd], N = w[2 - kd];
    if (w[0] != a.groups || x[1] != a.groups * K) {
      return make_error(c.where("inputs"), "'" + c.in(0).name + "' " + shape_str(x) + " and '" + c.in(1).name + "' " +
                                               shape_str(w) + " do not make " + std::to_string(a.groups) +
                                               " groups of [M,K] x [K,N]");
    }
    if (c.has(2)) return make_error(c.where("inputs"), "a grouped gemm takes no bias");
    *out = {x[0], a.groups * N};
    return {};
  }
  LOOM_TRY(c.rank(0, 2, "[M,K]"));
  LOOM_TRY(c.rank(1, 2, a.trans_b ? "[N,K]" : "[K,N]"));
  const auto& x = c.in(0).shape;
  const auto& w = c.in(1).shape;
  const int64_t K = w[kd], N = w[1 - kd];
  if (x[1] != K) {
    return make_error(c.where("inputs"), "'" + c.in(0).name + "' " + shape_str(x) + " and '" + c.in(1).name + "' " +
                                             shape_str(w) + " disagree on K");
  }
  if (c.has(2)) {
    LOOM_TRY(c.rank(2, 1, "[N]"));
    if (c.in(2).shape[0] != N) {
      return make_error(c.where("inputs"), "bias '" + c.in(2).name + "' " + shape_str(c.in(2).shape) +
                                               " does not match N = " + std::to_string(N));
    }
  }
  *out = {x[0], N};
  return {};
}

/// A reshape to `shape` (at most one -1).
Status infer_reshape(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  const int64_t total = *checked_numel(c.in(0).shape);  // checked with the tensor
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const int64_t d = a.shape[i];
    if (d == -1 && infer_at < 0) {
      infer_at = int64_t(i);
    } else if (d < 1) {
      return make_error(c.where("shape"), "dimension " + std::to_string(i) + " is " + std::to_string(d) +
                                              "; dims must be >= 1, with at most one -1");
    } else {
      known = known > std::numeric_limits<int64_t>::max() / d ? 0 : known * d;
      if (!known) return make_error(c.where("shape"), shape_str(a.shape) + " overflows int64");
    }
  }
  if (a.shape.empty()) return make_error(c.where("shape"), "must have at least one dimension");
  *out = a.shape;
  if (infer_at >= 0) {
    if (total % known != 0) {
      return make_error(c.where("shape"), shape_str(a.shape) + " cannot hold the " + std::to_string(total) +
                                              " elements of '" + c.in(0).name + "'");
    }
    (*out)[size_t(infer_at)] = total / known;
  } else if (known != total) {
    return make_error(c.where("shape"), shape_str(a.shape) + " has " + std::to_string(known) + " elements, '" +
                                            c.in(0).name + "' " + shape_str(c.in(0).shape) + " has " +
                                            std::to_string(total));
  }
  return {};
}

/// A transpose by `perm`.
Status infer_transpose(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  const auto& x = c.in(0).shape;
  if (a.perm.size() != x.size()) {
    return make_error(c.where("perm"), shape_str(a.perm) + " has " + std::to_string(a.perm.size()) + " entries, '" +
                                           c.in(0).name + "' " + shape_str(x) + " has rank " +
                                           std::to_string(x.size()));
  }
  std::vector<bool> seen(x.size(), false);
  out->clear();
  for (int64_t p : a.perm) {
    if (p < 0 || p >= int64_t(x.size()) || seen[size_t(p)])
      return make_error(c.where("perm"),
                        shape_str(a.perm) + " is not a permutation of 0.." + std::to_string(int64_t(x.size()) - 1));
    seen[size_t(p)] = true;
    out->push_back(x[size_t(p)]);
  }
  return {};
}

/// A concatenation along `axis`.
Status infer_concat(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  const Node& n = c.n;
  const auto& x = c.in(0).shape;
  if (a.axis < 0 || a.axis >= int64_t(x.size()))
    return make_error(c.where("axis"),
                      std::to_string(a.axis) + " is not an axis of '" + c.in(0).name + "' " + shape_str(x));
  *out = x;
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    const auto& s = c.in(k).shape;
    bool ok = s.size() == x.size();
    for (size_t d = 0; ok && d < x.size(); ++d) ok = int64_t(d) == a.axis || s[d] == x[d];
    if (!ok)
      return make_error(c.where("inputs"), "'" + c.in(k).name + "' " + shape_str(s) + " does not concatenate with '" +
                                               c.in(0).name + "' " + shape_str(x) + " along axis " +
                                               std::to_string(a.axis));
    (*out)[size_t(a.axis)] += s[size_t(a.axis)];  // bounded: each input's numel is checked
  }
  return {};
}

/// A slice [starts, ends) on every axis.
Status infer_slice(const ShapeCtx& c, std::vector<int64_t>* out) {
  const Attrs& a = c.n.attrs;
  const auto& x = c.in(0).shape;
  if (a.starts.size() != x.size() || a.ends.size() != x.size())
    return make_error(c.where("starts"),
                      "starts and ends need one value per axis of '" + c.in(0).name + "' " + shape_str(x));
  out->clear();
  for (size_t d = 0; d < x.size(); ++d) {
    if (a.starts[d] < 0 || a.ends[d] <= a.starts[d] || a.ends[d] > x[d])
      return make_error(c.where("starts"), "axis " + std::to_string(d) + ": [" + std::to_string(a.starts[d]) + ", " +
                                               std::to_string(a.ends[d]) + ") is not a non-empty range of 0.." +
                                               std::to_string(x[d]));
    out->push_back(a.ends[d] - a.starts[d]);
  }
  return {};
}

Status infer(const Graph& g, const Node& n, std::vector<int64_t>* out) {
  const ShapeCtx c{g, n};
  const Attrs& a = n.attrs;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const bool bias =
        ((n.op == OpKind::Conv2d || n.op == OpKind::Gemm) && i == 2) || (n.op == OpKind::LayerNorm && i == 1);
    if (c.has(i)) LOOM_TRY(c.dtype(i, bias ? DType::I32 : DType::I8));
  }
  switch (n.op) {
    case OpKind::Conv2d:
      return infer_conv(c, out);
    case OpKind::Gemm:
      return infer_gemm(c, out);
    case OpKind::Relu:
    case OpKind::Clip:
      *out = c.in(0).shape;
      return {};
    case OpKind::Softmax:
    case OpKind::LayerNorm: {
      const auto& x = c.in(0).shape;
      if (x.empty() || x.back() < 1 || x.back() > 65535)
        return make_error(c.where("inputs"), "'" + c.in(0).name + "' " + shape_str(x) +
                                                 ": the last axis (the row) must hold 1..65535 elements");
      if (n.op == OpKind::LayerNorm) {
        LOOM_TRY(c.dtype(1, DType::I32));
        if (!c.in(1).is_const || c.in(1).shape != std::vector<int64_t>{x.back(), 3})
          return make_error(c.where("inputs"), "params '" + c.in(1).name + "' must be a constant int32 [" +
                                                   std::to_string(x.back()) + ", 3] (b, g, sh per channel), is " +
                                                   shape_str(c.in(1).shape));
      }
      *out = x;
      return {};
    }
    case OpKind::Lut:
      if (!c.in(1).is_const || c.in(1).dtype != DType::I8 || c.in(1).shape != std::vector<int64_t>{256}) {
        return make_error(c.where("inputs"), "table '" + c.in(1).name + "' must be a constant int8 [256], is " +
                                                 std::string(c.in(1).is_const ? "" : "not constant, ") +
                                                 shape_str(c.in(1).shape));
      }
      *out = c.in(0).shape;
      return {};
    case OpKind::Add:
    case OpKind::Mul:
      if (!repeats_over(c.in(1).shape, c.in(0).shape)) {
        return make_error(c.where("inputs"), "'" + c.in(0).name + "' " + shape_str(c.in(0).shape) + " and '" +
                                                 c.in(1).name + "' " + shape_str(c.in(1).shape) + " differ (" +
                                                 op_name(n.op) + " broadcasts b only over a's leading dims)");
      }
      *out = c.in(0).shape;
      return {};
    case OpKind::MaxPool:
    case OpKind::AvgPool: {
      LOOM_TRY(c.rank(0, 4, "[N,H,W,C]"));
      const auto& x = c.in(0).shape;
      const bool padded = a.pad_top || a.pad_left || a.pad_bottom || a.pad_right;
      if (n.op == OpKind::AvgPool && !a.count_include_pad && padded) {
        return make_error(c.where("count_include_pad"), "false is only supported without padding");
      }
      int64_t oh = 0, ow = 0;
      LOOM_TRY(c.window(x[1], a.kernel_h, a.stride_h, a.pad_top, a.pad_bottom, "height", &oh));
      LOOM_TRY(c.window(x[2], a.kernel_w, a.stride_w, a.pad_left, a.pad_right, "width", &ow));
      *out = {x[0], oh, ow, x[3]};
      return {};
    }
    case OpKind::GlobalAvgPool: {
      LOOM_TRY(c.rank(0, 4, "[N,H,W,C]"));
      const auto& x = c.in(0).shape;
      *out = {x[0], 1, 1, x[3]};
      return {};
    }
    case OpKind::Reshape:
      return infer_reshape(c, out);
    case OpKind::Transpose:
      return infer_transpose(c, out);
    case OpKind::Concat:
      return infer_concat(c, out);
    case OpKind::Slice:
      return infer_slice(c, out);
    case OpKind::Flatten: {
      const auto& x = c.in(0).shape;
      if (x.empty()) return make_error(c.where("inputs"), "cannot flatten a scalar");
      int64_t rest = 1;
      for (size_t i = 1; i < x.size(); ++i) rest *= x[i];  // bounded by the checked numel of x
      *out = {x[0], rest};
      return {};
    }
  }
  return make_error(node_where(g, n), "unknown op kind");
}

// maxpool, reshape, flatten and transpose move int8 values unchanged, so both sides
// must mean the same real numbers.
Status same_quant(const Graph& g, const Node& n) {
  const TensorInfo& x = g.tensors.at(n.inputs[0]);
  const TensorInfo& y = g.tensors.at(n.outputs[0]);
  if (x.q.scale != y.q.scale || x.q.zero_point != y.q.zero_point) {
    return make_error(field_where(node_where(g, n), "outputs"),
                      std::string(op_name(n.op)) + " needs equal input and output quantization: '" + x.name +
                          "' has scale " + fmt_real(x.q.scale[0]) + " zero_point " + std::to_string(x.q.zero_point) +
                          ", '" + y.name + "' has scale " + fmt_real(y.q.scale[0]) + " zero_point " +
                          std::to_string(y.q.zero_point));
  }
  return {};
}

Status check_quant(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::Conv2d:
    case OpKind::Gemm:
      return mac_quant(g, n).status();
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Relu:
    case OpKind::Clip:
      return elt_quant(g, n).status();
    case OpKind::MaxPool:
      LOOM_TRY(same_quant(g, n));
      return pool_quant(g, n).status();
    case OpKind::AvgPool:
    case OpKind::GlobalAvgPool:
      return pool_quant(g, n).status();
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Transpose:
    case OpKind::Slice:
      return same_quant(g, n);
    case OpKind::Concat:
      for (size_t k = 0; k < n.inputs.size(); ++k) LOOM_TRY(concat_quant(g, n, k).status());
      return {};
    case OpKind::Lut:  // the table holds the output values: any quantization on either side
      return {};
    case OpKind::Softmax:
    case OpKind::LayerNorm:
      return row_quant(g, n).status();
  }
  return {};
}

Status check_node_refs(const Graph& g, const Node& n, std::set<std::string>* names,
                       std::map<std::string, size_t>* producer, size_t index) {
  const std::string where = n.name.empty() ? join_where(g.source, "node #" + std::to_string(index)) : node_where(g, n);
  if (n.name.empty()) return make_error(field_where(where, "name"), "node names must not be empty");
  if (!names->insert(n.name).second) return make_error(field_where(where, "name"), "duplicate node name");
  int lo = 99, hi = 0;
  for (const auto& o : detail::kOps) {
    if (o.kind == n.op) lo = std::min(lo, o.min_inputs), hi = std::max(hi, o.max_inputs);
  }
  if (int(n.inputs.size()) < lo || int(n.inputs.size()) > hi) {
    return make_error(field_where(where, "inputs"), std::string(op_name(n.op)) + " takes " + std::to_string(lo) +
                                                        (lo == hi ? "" : " to " + std::to_string(hi)) +
                                                        " inputs, got " + std::to_string(n.inputs.size()));
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const std::string& in = n.inputs[i];
    const bool optional = i == 2 && (n.op == OpKind::Conv2d || n.op == OpKind::Gemm);
    if (in.empty() && optional) continue;
    if (in.empty()) return make_error(field_where(where, "inputs"), "input " + std::to_string(i) + " is empty");
    if (!g.tensors.count(in)) {
      return make_error(field_where(where, "inputs"), "unknown tensor '" + in + "' (not declared under 'tensors')");
    }
  }
  if (n.outputs.size() != 1) {
    return make_error(field_where(where, "outputs"),
                      "expected exactly one output, got " + std::to_string(n.outputs.size()));
  }
  const std::string& out = n.outputs[0];
  auto t = g.tensors.find(out);
  if (t == g.tensors.end())
    return make_error(field_where(where, "outputs"), "unknown tensor '" + out + "' (not declared under 'tensors')");
  if (t->second.is_const) return make_error(field_where(where, "outputs"), "'" + out + "' is a constant");
  if (std::find(g.inputs.begin(), g.inputs.end(), out) != g.inputs.end()) {
    return make_error(field_where(where, "outputs"), "'" + out + "' is a graph input");
  }
  auto [it, fresh] = producer->emplace(out, index);
  if (!fresh) {
    return make_error(field_where(where, "outputs"),
                      "'" + out + "' is also produced by node '" + g.nodes[it->second].name + "'");
  }
  return {};
}

Status validate_impl(Graph& g) {
  for (auto& [key, t] : g.tensors) LOOM_TRY(check_tensor(g, key, t));
  LOOM_TRY(check_io(g, g.inputs, "inputs"));
  LOOM_TRY(check_io(g, g.outputs, "outputs"));

  std::set<std::string> names;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) LOOM_TRY(check_node_refs(g, g.nodes[i], &names, &producer, i));
  const std::set<std::string> graph_inputs(g.inputs.begin(), g.inputs.end());
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) {
      if (in.empty() || graph_inputs.count(in) || g.tensors.at(in).is_const || producer.count(in)) continue;
      return make_error(field_where(node_where(g, n), "inputs"),
                        "tensor '" + in + "' has no value: it is not a graph input, a constant, or any node's output");
    }
  }
  for (const auto& out : g.outputs) {
    if (!producer.count(out) && !graph_inputs.count(out)) {
      return make_error(field_where(g.source, "outputs"), "tensor '" + out + "' is not produced by any node");
    }
  }
  LOOM_TRY(topo_sort(g, producer));

  for (const auto& n : g.nodes) {
    std::vector<int64_t> shape;
    LOOM_TRY(infer(g, n, &shape));
    auto nel = checked_numel(shape);
    if (!nel) return make_error(field_where(node_where(g, n), "outputs"), nel.error().what);
    TensorInfo& y = g.tensors.at(n.outputs[0]);
    if (y.shape.empty()) {
      y.shape = shape;
    } else if (y.shape != shape) {
      return make_error(field_where(node_where(g, n), "outputs"), "tensor '" + y.name + "' is declared with shape " +
                                                                      shape_str(y.shape) + " but " + op_name(n.op) +
                                                                      " produces " + shape_str(shape));
    }
    LOOM_TRY(check_quant(g, n));
  }
  return {};
}

}  // namespace

Status validate(Graph& g) {
  try {
    return validate_impl(g);
  } catch (const std::exception& e) {
    return make_error(g.source, "cannot validate graph: " + exception_text(e.what()));
  }
}

}  // namespace loom::ir
