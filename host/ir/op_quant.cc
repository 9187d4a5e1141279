// Derivation of each op's integer requantization parameters from the graph's
// float scales (the single place both the reference and codegen get them).
#include "ir/op_quant.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "ir/ir_util.h"

namespace loom::ir {

using detail::field_where;
using detail::fmt_real;
using detail::node_where;

namespace {

Expected<const TensorInfo*> operand(const Graph& g, const Node& n, bool output, size_t i) {
  const auto& names = output ? n.outputs : n.inputs;
  const char* field = output ? "outputs" : "inputs";
  if (i >= names.size() || names[i].empty()) {
    return make_error(field_where(node_where(g, n), field), "missing operand " + std::to_string(i));
  }
  auto it = g.tensors.find(names[i]);
  if (it == g.tensors.end()) {
    return make_error(field_where(node_where(g, n), field), "unknown tensor '" + names[i] + "'");
  }
  return &it->second;
}

// Activations and the non-weight side of every op carry one scale and an
// int8 zero point; checked here too because op_quant is callable on graphs
// that never went through validate().
Status per_tensor_q(const Graph& g, const Node& n, const TensorInfo& t) {
  const std::string where = node_where(g, n) + ": tensor '" + t.name + "'";
  if (t.q.scale.size() != 1) {
    return make_error(field_where(where, "scale"), "expected one scale, got " + std::to_string(t.q.scale.size()));
  }
  if (!(t.q.scale[0] > 0) || !std::isfinite(t.q.scale[0])) {
    return make_error(field_where(where, "scale"), "scale " + fmt_real(t.q.scale[0]) + " must be positive and finite");
  }
  if (t.q.zero_point < -128 || t.q.zero_point > 127) {
    return make_error(field_where(where, "zero_point"),
                      std::to_string(t.q.zero_point) + " is outside the int8 range [-128, 127]");
  }
  return {};
}

Expected<Multiplier> derive(const Graph& g, const Node& n, double real, const std::string& formula) {
  Multiplier m;
  // Below 2^-32 the 31-bit multiplier cannot stay normalized within shift
  // 62: it keeps shift 62 and fewer bits (a weight channel near zero next
  // to large ones). Under 2^-63 it is 0, exactly what rounding gives: an
  // int32 accumulator times it is below 1/2.
  if (std::isfinite(real) && real > 0 && real < std::ldexp(1.0, -32)) {
    m.shift = kMaxShift;
    m.mult = int32_t(std::llround(std::ldexp(real, kMaxShift)));
    return m;
  }
  if (!quantize_multiplier(real, &m)) {
    return make_error(field_where(node_where(g, n), "scale"),
                      "requantization multiplier " + formula + " = " + fmt_real(real) +
                          " is not representable as mult/2^shift with shift in [1, 62]; check the tensor scales");
  }
  return m;
}

/// An add's two multipliers on one grid (one shift): the larger as derive()
/// gives it, the smaller rounded to the nearest integer on the larger's
/// shift, so that requantize_sum forms the sum exactly and rounds it once.
Expected<std::pair<Multiplier, Multiplier>> derive_pair(const Graph& g, const Node& n, double ra, double rb) {
  auto ma = derive(g, n, ra, "a_scale/y_scale");
  if (!ma) return ma.error();
  auto mb = derive(g, n, rb, "b_scale/y_scale");
  if (!mb) return mb.error();
  const bool a_big = ra >= rb;
  const int shift = a_big ? ma->shift : mb->shift;
  Multiplier& small = a_big ? *mb : *ma;
  small = Multiplier{int32_t(std::llround(std::ldexp(a_big ? rb : ra, shift))), shift};
  return std::make_pair(*ma, *mb);
}

Status clamp_range(const Graph& g, const Node& n, int32_t lo, int32_t hi, int32_t* out_lo, int32_t* out_hi) {
  *out_lo = std::max<int32_t>(-128, std::max(lo, n.attrs.act.lo));
  *out_hi = std::min<int32_t>(127, std::min(hi, n.attrs.act.hi));
  if (*out_lo > *out_hi) {
    return make_error(field_where(node_where(g, n), "activation"),
                      "output range [" + std::to_string(*out_lo) + ", " + std::to_string(*out_hi) + "] is empty");
  }
  return {};
}

}  // namespace

Expected<MacQuant> mac_quant(const Graph& g, const Node& n) {
  if (n.op != OpKind::Conv2d && n.op != OpKind::Gemm) {
    return make_error(node_where(g, n), std::string("mac_quant() does not apply to ") + op_name(n.op));
  }
  auto x = operand(g, n, false, 0);
  if (!x) return x.error();
  auto w = operand(g, n, false, 1);
  if (!w) return w.error();
  auto y = operand(g, n, true, 0);
  if (!y) return y.error();
  LOOM_TRY(per_tensor_q(g, n, **x));
  LOOM_TRY(per_tensor_q(g, n, **y));
  const TensorInfo& wt = **w;
  const bool grouped_gemm = n.op == OpKind::Gemm && n.attrs.groups != 1;
  const size_t rank = n.op == OpKind::Conv2d ? 4 : grouped_gemm ? 3 : 2;
  if (wt.shape.size() != rank) {
    return make_error(
        field_where(node_where(g, n), "inputs"),
        "weight '" + wt.name + "' has shape " + shape_str(wt.shape) + ", expected rank " + std::to_string(rank));
  }
  // Output channels: N of b [K,N] / [G,K,N], or of its transpose [N,K] / [G,N,K] (trans_b).
  const size_t n_dim = n.attrs.trans_b ? rank - 2 : rank - 1;
  const int64_t channels = grouped_gemm ? wt.shape[0] * wt.shape[n_dim] : wt.shape[n_dim];
  const std::string wwhere = node_where(g, n) + ": tensor '" + wt.name + "'";
  if (wt.q.scale.size() != 1 && int64_t(wt.q.scale.size()) != channels) {
    return make_error(field_where(wwhere, "scale"), "has " + std::to_string(wt.q.scale.size()) +
                                                        " values; expected 1 or one per output channel (" +
                                                        std::to_string(channels) + ")");
  }
  for (double s : wt.q.scale) {
    if (!(s > 0) || !std::isfinite(s)) {
      return make_error(field_where(wwhere, "scale"), "scale " + fmt_real(s) + " must be positive and finite");
    }
  }
  if (wt.q.zero_point < -128 || wt.q.zero_point > 127) {
    return make_error(field_where(wwhere, "zero_point"),
                      std::to_string(wt.q.zero_point) + " is outside the int8 range [-128, 127]");
  }
  MacQuant q;
  q.x_zp = (*x)->q.zero_point;
  q.w_zp = wt.q.zero_point;
  q.y_zp = (*y)->q.zero_point;
  q.even = n.attrs.round_even;
  q.mult.reserve(size_t(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double ws = wt.q.scale.size() == 1 ? wt.q.scale[0] : wt.q.scale[size_t(c)];
    const std::string formula = "x_scale*w_scale[" + std::to_string(c) + "]/y_scale";
    auto m = derive(g, n, (*x)->q.scale[0] * ws / (*y)->q.scale[0], formula);
    if (!m) return m.error();
    q.mult.push_back(*m);
  }
  LOOM_TRY(clamp_range(g, n, -128, 127, &q.lo, &q.hi));
  return q;
}

Expected<EltQuant> elt_quant(const Graph& g, const Node& n) {
  if (n.op != OpKind::Add && n.op != OpKind::Mul && n.op != OpKind::Relu && n.op != OpKind::Clip) {
    return make_error(node_where(g, n), std::string("elt_quant() does not apply to ") + op_name(n.op));
  }
  auto a = operand(g, n, false, 0);
  if (!a) return a.error();
  auto y = operand(g, n, true, 0);
  if (!y) return y.error();
  LOOM_TRY(per_tensor_q(g, n, **a));
  LOOM_TRY(per_tensor_q(g, n, **y));
  EltQuant q;
  q.a_zp = (*a)->q.zero_point;
  q.y_zp = (*y)->q.zero_point;
  const double ys = (*y)->q.scale[0];
  int32_t lo = -128, hi = 127;
  if (n.op == OpKind::Mul) {
    auto b = operand(g, n, false, 1);
    if (!b) return b.error();
    LOOM_TRY(per_tensor_q(g, n, **b));
    q.b_zp = (*b)->q.zero_point;
    auto m = derive(g, n, (*a)->q.scale[0] * (*b)->q.scale[0] / ys, "a_scale*b_scale/y_scale");
    if (!m) return m.error();
    q.a = *m;
    q.b = Multiplier{0, 1};
    q.mul = true;
    LOOM_TRY(clamp_range(g, n, lo, hi, &q.lo, &q.hi));
    return q;
  }
  if (n.op == OpKind::Add) {
    auto b = operand(g, n, false, 1);
    if (!b) return b.error();
    LOOM_TRY(per_tensor_q(g, n, **b));
    q.b_zp = (*b)->q.zero_point;
    auto m = derive_pair(g, n, (*a)->q.scale[0] / ys, (*b)->q.scale[0] / ys);
    if (!m) return m.error();
    std::tie(q.a, q.b) = *m;
    LOOM_TRY(clamp_range(g, n, lo, hi, &q.lo, &q.hi));
    return q;
  }
  auto ma = derive(g, n, (*a)->q.scale[0] / ys, "x_scale/y_scale");
  if (!ma) return ma.error();
  q.a = *ma;
  q.b = Multiplier{0, ma->shift};
  if (n.op == OpKind::Relu) {
    lo = q.y_zp;  // real 0 in the output domain
  } else {
    if (n.attrs.clip_min > n.attrs.clip_max || std::isnan(n.attrs.clip_min) || std::isnan(n.attrs.clip_max)) {
      return make_error(field_where(node_where(g, n), "min"), "clip min " + fmt_real(n.attrs.clip_min) +
                                                                  " is greater than max " + fmt_real(n.attrs.clip_max));
    }
    lo = detail::real_to_q(n.attrs.clip_min, (*y)->q.scale[0], q.y_zp);
    hi = detail::real_to_q(n.attrs.clip_max, (*y)->q.scale[0], q.y_zp);
  }
  LOOM_TRY(clamp_range(g, n, lo, hi, &q.lo, &q.hi));
  return q;
}

Expected<EltQuant> concat_quant(const Graph& g, const Node& n, size_t k) {
  if (n.op != OpKind::Concat) {
    return make_error(node_where(g, n), std::string("concat_quant() does not apply to ") + op_name(n.op));
  }
  auto x = operand(g, n, false, k);
  if (!x) return x.error();
  auto y = operand(g, n, true, 0);
  if (!y) return y.error();
  LOOM_TRY(per_tensor_q(g, n, **x));
  LOOM_TRY(per_tensor_q(g, n, **y));
  EltQuant q;
  q.a_zp = (*x)->q.zero_point;
  q.y_zp = (*y)->q.zero_point;
  auto m = derive(g, n, (*x)->q.scale[0] / (*y)->q.scale[0], "x_scale/y_scale");
  if (!m) return m.error();
  q.a = *m;
  q.b = Multiplier{0, 1};
  LOOM_TRY(clamp_range(g, n, -128, 127, &q.lo, &q.hi));
  return q;
}

Expected<PoolQuant> pool_quant(const Graph& g, const Node& n) {
  if (n.op != OpKind::MaxPool && n.op != OpKind::AvgPool && n.op != OpKind::GlobalAvgPool) {
    return make_error(node_where(g, n), std::string("pool_quant() does not apply to ") + op_name(n.op));
  }
  auto x = operand(g, n, false, 0);
  if (!x) return x.error();
  auto y = operand(g, n, true, 0);
  if (!y) return y.error();
  LOOM_TRY(per_tensor_q(g, n, **x));
  LOOM_TRY(per_tensor_q(g, n, **y));
  PoolQuant q;
  q.x_zp = (*x)->q.zero_point;
  q.y_zp = (*y)->q.zero_point;
  if (n.op == OpKind::GlobalAvgPool) {
    if ((*x)->shape.size() != 4) {
      return make_error(field_where(node_where(g, n), "inputs"),
                        "input '" + (*x)->name + "' has shape " + shape_str((*x)->shape) + ", expected [N,H,W,C]");
    }
    q.window = (*x)->shape[1] * (*x)->shape[2];
  } else {
    q.window = n.attrs.kernel_h * n.attrs.kernel_w;
  }
  // |x - x_zp| <= 255, and the window sum must stay an int32 for rq().
  if (q.window < 1 || q.window > int64_t(INT32_MAX) / 255) {
    return make_error(field_where(node_where(g, n), n.op == OpKind::GlobalAvgPool ? "inputs" : "kernel"),
                      "pooling window of " + std::to_string(q.window) + " elements is outside [1, " +
                          std::to_string(INT32_MAX / 255) + "]");
  }
  if (n.op == OpKind::MaxPool) {
    if ((*x)->q.scale[0] != (*y)->q.scale[0] || q.x_zp != q.y_zp) {
      return make_error(field_where(node_where(g, n), "outputs"),
                        "maxpool needs equal input and output quantization: '" + (*x)->name + "' has scale " +
                            fmt_real((*x)->q.scale[0]) + " zero_point " + std::to_string(q.x_zp) + ", '" + (*y)->name +
                            "' has scale " + fmt_real((*y)->q.scale[0]) + " zero_point " + std::to_string(q.y_zp));
    }
    q.avg = Multiplier{int32_t(1) << 30, 30};  // exactly 1.0, for readers that apply it anyway
  } else {
    auto m = derive(g, n, (*x)->q.scale[0] / ((*y)->q.scale[0] * double(q.window)), "x_scale/(y_scale*window)");
    if (!m) return m.error();
    q.avg = *m;
  }
  LOOM_TRY(clamp_range(g, n, -128, 127, &q.lo, &q.hi));
  return q;
}

Expected<RowQuant> row_quant(const Graph& g, const Node& n) {
  if (n.op != OpKind::Softmax && n.op != OpKind::LayerNorm) {
    return make_error(node_where(g, n), std::string("row_quant() does not apply to ") + op_name(n.op));
  }
  auto x = operand(g, n, false, 0);
  if (!x) return x.error();
  auto y = operand(g, n, true, 0);
  if (!y) return y.error();
  LOOM_TRY(per_tensor_q(g, n, **x));
  LOOM_TRY(per_tensor_q(g, n, **y));
  RowQuant q;
  q.ln = n.op == OpKind::LayerNorm;
  const auto& shape = (*x)->shape;
  q.n = shape.empty() ? 1 : shape.back();
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  q.rows = q.n == 0 ? 0 : numel / q.n;
  q.x_zp = (*x)->q.zero_point;
  q.y_zp = (*y)->q.zero_point;
  std::string why;
  if (!q.ln) {
    if (!softmax_params((*x)->q.scale[0], (*y)->q.scale[0], &q.softmax, &why))
      return make_error(node_where(g, n), "softmax: " + why);
    return q;
  }
  auto p = operand(g, n, false, 1);
  if (!p) return p.error();
  const Tensor& d = (*p)->data;
  if (!(*p)->is_const || d.dtype != DType::I32 || (*p)->shape != std::vector<int64_t>{q.n, 3})
    return make_error(field_where(node_where(g, n), "inputs"),
                      "params '" + (*p)->name + "' must be a constant int32 [" + std::to_string(q.n) + ", 3]");
  q.channels.resize(size_t(q.n));
  for (int64_t j = 0; j < q.n; ++j) {
    q.channels[size_t(j)] = {d.i32()[3 * j], d.i32()[3 * j + 1], d.i32()[3 * j + 2]};
    const int32_t sh = q.channels[size_t(j)].sh;
    if (sh < kMinShift || sh > kMaxShift)
      return make_error(field_where(node_where(g, n), "inputs"), "params '" + (*p)->name + "' channel " +
                                                                     std::to_string(j) + ": shift " +
                                                                     std::to_string(sh) + " is outside 1..62");
  }
  q.eps = uint32_t(n.attrs.eps);
  return q;
}

}  // namespace loom::ir
