// The direct reference: every op as nested loops straight from its integer
// definition (docs/graph-format.md), deliberately untiled and unoptimized so
// it stays obviously correct; compiled plans are checked against it.
#include <algorithm>
#include <map>
#include <string>

#include "common/limits.h"
#include "common/tensor_io.h"
#include "ir/graph.h"
#include "ir/ir_util.h"
#include "ir/op_quant.h"

namespace loom::ir {

using detail::field_where;
using detail::node_where;

namespace {

int32_t out_q(int64_t v, int32_t lo, int32_t hi) { return int32_t(std::clamp<int64_t>(v, lo, hi)); }

/// A conv/gemm output's requantization: rq, or rqe with round_even.
int32_t mac_rq(const MacQuant& q, int32_t v, const Multiplier& mu) {
  return q.even ? requantize_even(v, mu.mult, mu.shift) : requantize(v, mu.mult, mu.shift);
}

// NHWC addressing.
struct Nhwc {
  int64_t n, h, w, c;
  explicit Nhwc(const std::vector<int64_t>& s) : n(s[0]), h(s[1]), w(s[2]), c(s[3]) {}
  int64_t at(int64_t in, int64_t ih, int64_t iw, int64_t ic) const { return ((in * h + ih) * w + iw) * c + ic; }
};

void conv2d(const Node& nd, const MacQuant& q, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor* y) {
  const Attrs& a = nd.attrs;
  const Nhwc xs(x.shape), ys(y->shape);
  const int64_t kh = w.shape[0], kw = w.shape[1], cpg = w.shape[2], m_total = w.shape[3];
  const int64_t mpg = m_total / a.groups;  // output channels per group
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t oh = 0; oh < ys.h; ++oh)
      for (int64_t ow = 0; ow < ys.w; ++ow)
        for (int64_t m = 0; m < m_total; ++m) {
          const int64_t grp = m / mpg;
          uint32_t acc = 0;  // wraps modulo 2^32, as the int32 accumulators do
          for (int64_t r = 0; r < kh; ++r)
            for (int64_t s = 0; s < kw; ++s) {
              const int64_t ih = oh * a.stride_h - a.pad_top + r;
              const int64_t iw = ow * a.stride_w - a.pad_left + s;
              if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;  // padding: (x_zp - x_zp) * w = 0
              for (int64_t ci = 0; ci < cpg; ++ci) {
                const int32_t xv = x.i8()[xs.at(n, ih, iw, grp * cpg + ci)] - q.x_zp;
                const int32_t wv = w.i8()[((r * kw + s) * cpg + ci) * m_total + m] - q.w_zp;
                acc += uint32_t(xv * wv);
              }
            }
          if (bias) acc += uint32_t(bias->i32()[m]);
          const int32_t v = int32_t(acc);
          const auto& mu = q.mult[size_t(m)];
          y->i8()[ys.at(n, oh, ow, m)] = int8_t(out_q(int64_t(mac_rq(q, v, mu)) + q.y_zp, q.lo, q.hi));
        }
}

// Grouped (b [G,K,N]): group g multiplies columns [g*K, (g+1)*K) of a by
// b[g] into columns [g*N, (g+1)*N) of y.
void gemm(const MacQuant& q, const Tensor& a, const Tensor& b, bool trans_b, const Tensor* bias, Tensor* y) {
  const bool grouped = b.shape.size() == 3;
  const int64_t groups = grouped ? b.shape[0] : 1;
  const size_t d0 = grouped ? 1 : 0;  // b's last two dims: [K, N], or [N, K] with trans_b
  const int64_t rows = a.shape[0], k_len = b.shape[d0 + (trans_b ? 1 : 0)], cols = b.shape[d0 + (trans_b ? 0 : 1)];
  const int64_t a_row = groups * k_len, y_row = groups * cols;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        uint32_t acc = 0;
        for (int64_t k = 0; k < k_len; ++k) {
          const int32_t av = a.i8()[i * a_row + g * k_len + k] - q.x_zp;
          const int64_t at = trans_b ? (g * cols + j) * k_len + k : (g * k_len + k) * cols + j;
          const int32_t bv = b.i8()[at] - q.w_zp;
          acc += uint32_t(av * bv);
        }
        const int64_t c = g * cols + j;
        if (bias) acc += uint32_t(bias->i32()[c]);
        const auto& mu = q.mult[size_t(c)];
        y->i8()[i * y_row + c] = int8_t(out_q(int64_t(mac_rq(q, int32_t(acc), mu)) + q.y_zp, q.lo, q.hi));
      }
}

void transpose(const std::vector<int64_t>& perm, const Tensor& x, Tensor* y) {
  const size_t r = perm.size();
  std::vector<int64_t> xstride(r, 1), idx(r, 0);
  for (size_t d = r; d-- > 1;) xstride[d - 1] = xstride[d] * x.shape[d];
  for (int64_t o = 0; o < y->numel(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d) src += idx[d] * xstride[size_t(perm[d])];
    y->i8()[o] = x.i8()[src];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < y->shape[d]) break;
      idx[d] = 0;
    }
  }
}

void eltwise(const EltQuant& q, const Tensor& a, const Tensor* b, Tensor* y) {
  for (int64_t i = 0; i < y->numel(); ++i) {
    int64_t v = 0;
    if (q.mul) {
      v = requantize(int64_t(a.i8()[i] - q.a_zp) * (b->i8()[i % b->numel()] - q.b_zp), q.a.mult, q.a.shift);
    } else {  // one rounding of the sum, on the grid of a's shift (q.b.shift == q.a.shift)
      const int64_t bv = b ? int64_t(b->i8()[i % b->numel()]) - q.b_zp : 0;
      v = requantize_sum(a.i8()[i] - q.a_zp, q.a.mult, bv, b ? q.b.mult : 0, q.a.shift);
    }
    y->i8()[i] = int8_t(out_q(v + q.y_zp, q.lo, q.hi));
  }
}

/// Each input requantized (as one ELTWISE copy) into its slice of y.
Status concat(const Graph& g, const Node& n, const std::map<std::string, Tensor>& vals, Tensor* y) {
  const int64_t axis = n.attrs.axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(y->shape.size()); ++d) {
    if (d < axis) outer *= y->shape[size_t(d)];
    if (d > axis) inner *= y->shape[size_t(d)];
  }
  const int64_t pitch = y->shape[size_t(axis)] * inner;
  int64_t at = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    auto q = concat_quant(g, n, k);
    if (!q) return q.error();
    const Tensor& x = vals.at(n.inputs[k]);
    Tensor r(DType::I8, x.shape);
    eltwise(*q, x, nullptr, &r);
    const int64_t width = x.shape[size_t(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::copy(r.i8() + o * width, r.i8() + (o + 1) * width, y->i8() + o * pitch + at);
    at += width;
  }
  return {};
}

void slice(const Attrs& a, const Tensor& x, Tensor* y) {
  const size_t r = x.shape.size();
  std::vector<int64_t> xs(r, 1);
  for (size_t d = r; d-- > 1;) xs[d - 1] = xs[d] * x.shape[d];
  for (int64_t o = 0; o < y->numel(); ++o) {
    int64_t rest = o, src = 0;
    for (size_t d = r; d-- > 0;) {
      src += (a.starts[d] + rest % y->shape[d]) * xs[d];
      rest /= y->shape[d];
    }
    y->i8()[o] = x.i8()[src];
  }
}

void pool(const Node& nd, const PoolQuant& q, const Tensor& x, Tensor* y) {
  const Attrs& a = nd.attrs;
  const bool global = nd.op == OpKind::GlobalAvgPool;
  const int64_t kh = global ? x.shape[1] : a.kernel_h, kw = global ? x.shape[2] : a.kernel_w;
  const int64_t sh = global ? 1 : a.stride_h, sw = global ? 1 : a.stride_w;
  const int64_t pt = global ? 0 : a.pad_top, pl = global ? 0 : a.pad_left;
  const Nhwc xs(x.shape), ys(y->shape);
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t oh = 0; oh < ys.h; ++oh)
      for (int64_t ow = 0; ow < ys.w; ++ow)
        for (int64_t c = 0; c < ys.c; ++c) {
          int32_t mx = -128;
          int64_t sum = 0;  // padding adds x_zp - x_zp = 0 (count_include_pad)
          for (int64_t r = 0; r < kh; ++r)
            for (int64_t s = 0; s < kw; ++s) {
              const int64_t ih = oh * sh - pt + r, iw = ow * sw - pl + s;
              if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;
              const int32_t v = x.i8()[xs.at(n, ih, iw, c)];
              mx = std::max(mx, v);
              sum += v - q.x_zp;
            }
          const int64_t v =
              nd.op == OpKind::MaxPool ? mx : int64_t(requantize_even(sum, q.avg.mult, q.avg.shift)) + q.y_zp;
          y->i8()[ys.at(n, oh, ow, c)] = int8_t(out_q(v, q.lo, q.hi));
        }
}

Status run_node(const Graph& g, const Node& n, std::map<std::string, Tensor>& vals, Tensor* y) {
  auto val = [&](size_t i) -> const Tensor* {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return nullptr;
    return &vals.at(n.inputs[i]);
  };
  switch (n.op) {
    case OpKind::Conv2d:
    case OpKind::Gemm: {
      auto q = mac_quant(g, n);
      if (!q) return q.error();
      if (n.op == OpKind::Conv2d) {
        conv2d(n, *q, *val(0), *val(1), val(2), y);
      } else {
        gemm(*q, *val(0), *val(1), n.attrs.trans_b, val(2), y);
      }
      return {};
    }
    case OpKind::Relu:
    case OpKind::Clip:
    case OpKind::Add:
    case OpKind::Mul: {
      auto q = elt_quant(g, n);
      if (!q) return q.error();
      eltwise(*q, *val(0), n.op == OpKind::Add || n.op == OpKind::Mul ? val(1) : nullptr, y);
      return {};
    }
    case OpKind::MaxPool:
    case OpKind::AvgPool:
    case OpKind::GlobalAvgPool: {
      auto q = pool_quant(g, n);
      if (!q) return q.error();
      pool(n, *q, *val(0), y);
      return {};
    }
    case OpKind::Reshape:
    case OpKind::Flatten:
      y->data = val(0)->data;  // row-major data is unchanged by a reshape
      return {};
    case OpKind::Softmax:
    case OpKind::LayerNorm: {
      auto q = row_quant(g, n);
      if (!q) return q.error();
      const int8_t* x = val(0)->i8();
      int8_t* yy = y->i8();
      for (int64_t r = 0; r < q->rows; ++r) {
        if (q->ln)
          layernorm_row(x + r * q->n, uint64_t(q->n), q->x_zp, q->eps, q->channels.data(), q->y_zp, q->lo, q->hi,
                        yy + r * q->n);
        else
          softmax_row(x + r * q->n, uint64_t(q->n), q->softmax.table.data(), q->softmax.mult, q->softmax.shift, q->y_zp,
                      q->lo, q->hi, yy + r * q->n);
      }
      return {};
    }
    case OpKind::Lut:
      for (int64_t i = 0; i < y->numel(); ++i) y->i8()[i] = val(1)->i8()[val(0)->i8()[i] + 128];
      return {};
    case OpKind::Transpose:
      transpose(n.attrs.perm, *val(0), y);
      return {};
    case OpKind::Concat:
      return concat(g, n, vals, y);
    case OpKind::Slice:
      slice(n.attrs, *val(0), y);
      return {};
  }
  return make_error(node_where(g, n), "unknown op kind");
}

Expected<std::map<std::string, Tensor>> run(const Graph& in, const std::map<std::string, Tensor>& inputs) {
  // Validate a copy: the reference must never index out of bounds, even for
  // a graph a pass built by hand and never validated.
  Graph g = in;
  LOOM_TRY(validate(g));
  std::map<std::string, Tensor> vals;
  for (const auto& [name, t] : g.tensors) {
    if (t.is_const) vals.emplace(name, t.data);
  }
  for (const auto& [name, t] : inputs) {
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end()) {
      return make_error(g.source, "input '" + name + "' is not a graph input");
    }
  }
  for (const auto& name : g.inputs) {
    const TensorInfo& ti = g.tensor(name);
    auto it = inputs.find(name);
    if (it == inputs.end()) return make_error(g.source, "no value given for graph input '" + name + "'");
    const Tensor& t = it->second;
    if (t.dtype != DType::I8 || t.shape != ti.shape || t.data.size() != uint64_t(t.numel())) {
      return make_error(g.source, "graph input '" + name + "' must be int8 " + shape_str(ti.shape) + ", got " +
                                      std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape));
    }
    vals[name] = t;
  }
  for (const auto& n : g.nodes) {
    const TensorInfo& yi = g.tensor(n.outputs[0]);
    if (*checked_numel(yi.shape) > limits::kMaxTensorElems) {
      return make_error(field_where(node_where(g, n), "outputs"),
                        "tensor '" + yi.name + "' " + shape_str(yi.shape) + " is too large for the reference");
    }
    Tensor y(DType::I8, yi.shape);
    LOOM_TRY(run_node(g, n, vals, &y));
    vals[n.outputs[0]] = std::move(y);
  }
  // Constants are inputs to the computation, not results.
  for (const auto& [name, t] : g.tensors) {
    if (t.is_const) vals.erase(name);
  }
  return vals;
}

}  // namespace

Expected<std::map<std::string, Tensor>> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  try {
    return run(g, inputs);
  } catch (const std::exception& e) {
    return make_error(g.source, "reference run failed: " + exception_text(e.what()));
  }
}

std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::map<std::string, Tensor> out;
  detail::SplitMix64 rng(seed);
  for (const auto& name : g.inputs) {
    auto it = g.tensors.find(name);
    if (it == g.tensors.end()) continue;
    auto n = checked_numel(it->second.shape);
    if (!n || *n > limits::kMaxTensorElems) continue;
    Tensor t(DType::I8, it->second.shape);
    for (int64_t i = 0; i < *n; ++i) t.i8()[i] = int8_t(rng.in_range(-128, 127));
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace loom::ir
