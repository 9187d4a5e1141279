// Host implementations of ONNX ops (the fallback for what the fabric cannot
// run, and the reference for the conformance tests). Written from the ONNX
// operator specification; integer results are exact, float ones are
// computed in float32 (accumulations in double) like the ONNX reference.
#include "frontend/onnx/host_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>

#include "common/rownorm.h"
#include "frontend/onnx/host_kernels.h"

namespace loom::onnxfe {

namespace {

using namespace hostk;

// Per-axis parameter lookup for Quantize/DequantizeLinear.
struct AxisParam {
  int64_t axis = -1, stride = 1, dim = 1;
  int64_t index(int64_t flat) const { return axis < 0 ? 0 : (flat / stride) % dim; }
};

Expected<AxisParam> axis_param(const Ctx& c, const Value& x, const Value& p) {
  AxisParam ap;
  if (p.numel() == 1) return ap;
  const int64_t axis = norm_axis(c.n.get_i("axis", 1), x.shape.size());
  if (axis < 0 || axis >= int64_t(x.shape.size()))
    return c.err("attribute 'axis'", "axis " + std::to_string(c.n.get_i("axis", 1)) + " is out of range for rank " +
                                         std::to_string(x.shape.size()));
  if (x.shape[size_t(axis)] != p.numel())
    return c.err("input '" + c.n.in(1) + "'", "has " + std::to_string(p.numel()) + " values; axis " +
                                                  std::to_string(axis) + " has " +
                                                  std::to_string(x.shape[size_t(axis)]));
  ap.axis = axis;
  ap.dim = x.shape[size_t(axis)];
  ap.stride = strides_of(x.shape)[size_t(axis)];
  return ap;
}

Status zp_matches(const Ctx& c, size_t scale, size_t zp) {
  if (c.has(zp) && c.in(zp).numel() != c.in(scale).numel())
    return c.err("input '" + c.n.in(zp) + "'", "zero point has " + std::to_string(c.in(zp).numel()) +
                                                   " values but the scale has " + std::to_string(c.in(scale).numel()));
  return {};
}

Status quantize_linear(const Ctx& c) {
  LOOM_TRY(zp_matches(c, 1, 2));
  const Value& x = c.in(0);
  const Value& s = c.in(1);
  const int32_t ytype = c.has(2) ? c.in(2).type : kUint8;
  auto ap = axis_param(c, x, s);
  if (!ap) return ap.error();
  Value y = Value::make(ytype, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = ap->index(k);
    const float sc = s.f[size_t(p)];
    double q;
    if (x.is_float()) {
      q = std::nearbyint(double(x.f[size_t(k)] / sc));
    } else {
      q = std::nearbyint(double(x.i[size_t(k)]) / double(sc));
    }
    const int64_t zp = c.has(2) ? c.in(2).i[size_t(p)] : 0;
    if (std::isnan(q)) q = 0;  // NaN (e.g. Sqrt of a negative) quantizes to the zero point
    const double v = q + double(zp);
    y.i[size_t(k)] = saturate(to_int64(v), ytype);
  }
  c.out(0, std::move(y));
  return {};
}

Status dequantize_linear(const Ctx& c) {
  LOOM_TRY(zp_matches(c, 1, 2));
  const Value& x = c.in(0);
  const Value& s = c.in(1);
  auto ap = axis_param(c, x, s);
  if (!ap) return ap.error();
  Value y = Value::make(kFloat, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = ap->index(k);
    const float zp = c.has(2) ? float(c.in(2).i[size_t(p)]) : 0.0f;
    y.f[size_t(k)] = (float(x.i[size_t(k)]) - zp) * s.f[size_t(p)];
  }
  c.out(0, std::move(y));
  return {};
}

// ---- convolution ----------------------------------------------------------

struct ConvGeom {
  int64_t n, c, h, w, m, kh, kw, oh, ow, group;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
};

// Output size and begin padding for one spatial axis (explicit or auto_pad).
Status spatial(const Ctx& c, const std::string& auto_pad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
               int64_t pe, bool ceil_mode, int64_t* out, int64_t* pad_begin) {
  const int64_t ek = (k - 1) * d + 1;
  if (auto_pad == "NOTSET") {
    const int64_t span = in + pb + pe - ek;
    if (span < 0) return c.err("attribute 'kernel_shape'", "the window is larger than the padded input");
    *out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    *pad_begin = pb;
  } else if (auto_pad == "VALID") {
    if (in < ek) return c.err("attribute 'kernel_shape'", "the window is larger than the input");
    *out = (in - ek) / s + 1;
    *pad_begin = 0;
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    *out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((*out - 1) * s + ek - in, 0);
    *pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
  } else {
    return c.err("attribute 'auto_pad'", "unknown value '" + auto_pad + "'");
  }
  return {};
}

Expected<ConvGeom> conv_geom(const Ctx& c, const Value& x, const Value& w) {
  if (x.shape.size() != 4 || w.shape.size() != 4)
    return c.err("inputs", "only 2-D convolutions (rank-4 x and w) are supported, got x " + shape_str(x.shape) + " w " +
                               shape_str(w.shape));
  ConvGeom g{};
  g.n = x.shape[0], g.c = x.shape[1], g.h = x.shape[2], g.w = x.shape[3];
  g.m = w.shape[0], g.kh = w.shape[2], g.kw = w.shape[3];
  g.group = c.n.get_i("group", 1);
  if (g.group < 1 || g.c % g.group || g.m % g.group || w.shape[1] != g.c / g.group)
    return c.err("attribute 'group'", "group " + std::to_string(g.group) + " does not fit x " + shape_str(x.shape) +
                                          " and w " + shape_str(w.shape));
  auto ks = c.n.get_ints("kernel_shape", {g.kh, g.kw});
  if (ks.size() != 2 || ks[0] != g.kh || ks[1] != g.kw)
    return c.err("attribute 'kernel_shape'", "does not match the weight " + shape_str(w.shape));
  auto st = c.n.get_ints("strides", {1, 1});
  auto dl = c.n.get_ints("dilations", {1, 1});
  auto pads = c.n.get_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || dl.size() != 2 || pads.size() != 4)
    return c.err("attributes", "expected 2-D strides, dilations and pads");
  g.sh = st[0], g.sw = st[1], g.dh = dl[0], g.dw = dl[1];
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1) return c.err("attributes", "strides and dilations must be >= 1");
  for (auto p : pads)
    if (p < 0) return c.err("attribute 'pads'", "pads must be >= 0");
  const std::string ap = c.n.get_s("auto_pad", "NOTSET");
  LOOM_TRY(spatial(c, ap, g.h, g.kh, g.sh, g.dh, pads[0], pads[2], false, &g.oh, &g.pt));
  LOOM_TRY(spatial(c, ap, g.w, g.kw, g.sw, g.dw, pads[1], pads[3], false, &g.ow, &g.pl));
  return g;
}

// acc[n, m, oh, ow] = sum (x - xz) (w - wz[m]) over the window (int64 exact or double).
template <class T, class XF, class WF>
std::vector<T> conv_acc(const ConvGeom& g, XF xv, WF wv) {
  std::vector<T> acc(size_t(g.n * g.m * g.oh * g.ow), T(0));
  const int64_t cpg = g.c / g.group, mpg = g.m / g.group;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.m; ++m) {
      const int64_t grp = m / mpg;
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          T s = 0;
          for (int64_t ci = 0; ci < cpg; ++ci)
            for (int64_t r = 0; r < g.kh; ++r) {
              const int64_t ih = oh * g.sh - g.pt + r * g.dh;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t q = 0; q < g.kw; ++q) {
                const int64_t iw = ow * g.sw - g.pl + q * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                const int64_t cin = grp * cpg + ci;
                s += xv(((n * g.c + cin) * g.h + ih) * g.w + iw) * wv(((m * cpg + ci) * g.kh + r) * g.kw + q, m);
              }
            }
          acc[size_t(((n * g.m + m) * g.oh + oh) * g.ow + ow)] = s;
        }
    }
  return acc;
}

int64_t param_i(const Value* v, int64_t idx) {
  if (v == nullptr) return 0;
  return v->numel() == 1 ? v->i[0] : v->i[size_t(idx)];
}
float param_f(const Value& v, int64_t idx) { return v.numel() == 1 ? v.f[0] : v.f[size_t(idx)]; }

// Requantization as ONNX Runtime and the ONNX reference do it: the float32
// multiplier x_scale * w_scale / y_scale applied to the int32 accumulator,
// rounded half to even, plus the zero point, saturated.
int64_t requant(int64_t acc, float xs, float ws, float ys, int64_t yz, int32_t type) {
  const float mult = xs * ws / ys;
  const float v = float(int32_t(acc)) * mult;
  const double r = std::nearbyint(double(v)) + double(yz);
  return saturate(to_int64(r), type);
}

Status conv_integer_like(const Ctx& c, bool qlinear) {
  // ConvInteger: x, w, x_zp, w_zp.  QLinearConv: x, xs, xz, w, ws, wz, ys, yz, B.
  const Value& x = c.in(0);
  const Value& w = c.in(qlinear ? 3 : 1);
  const Value* xz = c.has(qlinear ? 2 : 2) ? &c.in(2) : nullptr;
  const Value* wz = c.has(qlinear ? 5 : 3) ? &c.in(qlinear ? 5 : 3) : nullptr;
  auto g = conv_geom(c, x, w);
  if (!g) return g.error();
  if (wz && wz->numel() != 1 && wz->numel() != g->m)
    return c.err("input '" + c.n.in(qlinear ? 5 : 3) + "'",
                 "w zero point has " + std::to_string(wz->numel()) + " values; expected 1 or " + std::to_string(g->m));
  const int64_t x0 = param_i(xz, 0);
  auto acc = conv_acc<int64_t>(
      *g, [&](int64_t k) { return x.i[size_t(k)] - x0; },
      [&](int64_t k, int64_t m) { return w.i[size_t(k)] - param_i(wz, m); });
  const std::vector<int64_t> oshape{g->n, g->m, g->oh, g->ow};
  const int64_t plane = g->oh * g->ow;
  if (!qlinear) {
    Value y = Value::make(kInt32, oshape);
    for (size_t k = 0; k < acc.size(); ++k) y.i[k] = int64_t(int32_t(uint32_t(uint64_t(acc[k]))));
    c.out(0, std::move(y));
    return {};
  }
  const Value& xs = c.in(1);
  const Value& ws = c.in(4);
  const Value& ys = c.in(6);
  const int32_t ytype = c.has(7) ? c.in(7).type : x.type;
  const int64_t yz = c.has(7) ? c.in(7).i[0] : 0;
  const Value* b = c.has(8) ? &c.in(8) : nullptr;
  if (b && b->numel() != g->m)
    return c.err("input '" + c.n.in(8) + "'",
                 "bias has " + std::to_string(b->numel()) + " values; expected " + std::to_string(g->m));
  if (ws.numel() != 1 && ws.numel() != g->m)
    return c.err("input '" + c.n.in(4) + "'",
                 "w scale has " + std::to_string(ws.numel()) + " values; expected 1 or " + std::to_string(g->m));
  Value y = Value::make(ytype, oshape);
  for (size_t k = 0; k < acc.size(); ++k) {
    const int64_t m = (int64_t(k) / plane) % g->m;
    int64_t a = int64_t(int32_t(uint32_t(uint64_t(acc[k]))));
    if (b) a = int64_t(int32_t(uint32_t(uint64_t(a + b->i[size_t(m)]))));
    y.i[k] = requant(a, xs.f[0], param_f(ws, m), ys.f[0], yz, ytype);
  }
  c.out(0, std::move(y));
  return {};
}

Status conv_float(const Ctx& c) {
  const Value& x = c.in(0);
  const Value& w = c.in(1);
  auto g = conv_geom(c, x, w);
  if (!g) return g.error();
  auto acc = conv_acc<double>(
      *g, [&](int64_t k) { return double(x.f[size_t(k)]); },
      [&](int64_t k, int64_t) { return double(w.f[size_t(k)]); });
  Value y = Value::make(kFloat, {g->n, g->m, g->oh, g->ow});
  const int64_t plane = g->oh * g->ow;
  for (size_t k = 0; k < acc.size(); ++k) {
    double v = acc[k];
    if (c.has(2)) v += double(c.in(2).f[size_t((int64_t(k) / plane) % g->m)]);
    y.f[k] = float(v);
  }
  c.out(0, std::move(y));
  return {};
}

// ---- matmul ---------------------------------------------------------------

struct MatGeom {
  std::vector<int64_t> out;  // full output shape
  int64_t batch = 1, M = 1, K = 1, N = 1;
  std::vector<int64_t> a_off, b_off;  // per batch: element offsets of the a and b matrices
};

Expected<MatGeom> mat_geom(const Ctx& c, std::vector<int64_t> as, std::vector<int64_t> bs) {
  bool a1 = false, b1 = false;
  if (as.size() == 1) as.insert(as.begin(), 1), a1 = true;
  if (bs.size() == 1) bs.push_back(1), b1 = true;
  if (as.empty() || bs.empty()) return c.err("inputs", "matmul of scalars");
  MatGeom g;
  g.M = as[as.size() - 2], g.K = as.back(), g.N = bs.back();
  if (bs[bs.size() - 2] != g.K)
    return c.err("inputs", "inner dimensions differ: " + shape_str(as) + " x " + shape_str(bs));
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2), ob;
  if (!broadcast_shape(ab, bb, &ob)) return c.err("inputs", "batch dimensions do not broadcast");
  auto ai = broadcast_index(ab, ob), bi = broadcast_index(bb, ob);
  g.batch = int64_t(ai.size());
  for (int64_t k = 0; k < g.batch; ++k) {
    g.a_off.push_back(ai[size_t(k)] * g.M * g.K);
    g.b_off.push_back(bi[size_t(k)] * g.K * g.N);
  }
  g.out = ob;
  if (!a1) g.out.push_back(g.M);
  if (!b1) g.out.push_back(g.N);
  return g;
}

template <class T, class AF, class BF, class OF>
void mat_loop(const MatGeom& g, AF av, BF bv, OF out) {
  for (int64_t bt = 0; bt < g.batch; ++bt)
    for (int64_t i = 0; i < g.M; ++i)
      for (int64_t j = 0; j < g.N; ++j) {
        T s = 0;
        for (int64_t k = 0; k < g.K; ++k)
          s += av(g.a_off[size_t(bt)] + i * g.K + k) * bv(g.b_off[size_t(bt)] + k * g.N + j, j);
        out((bt * g.M + i) * g.N + j, j, s);
      }
}

Status matmul_integer_like(const Ctx& c, bool qlinear) {
  // MatMulInteger: A, B, a_zp, b_zp.  QLinearMatMul: a, as, az, b, bs, bz, ys, yz (+ bias, loom domain).
  const Value& a = c.in(0);
  const Value& b = c.in(qlinear ? 3 : 1);
  const Value* az = c.has(2) ? &c.in(2) : nullptr;
  const Value* bz = c.has(qlinear ? 5 : 3) ? &c.in(qlinear ? 5 : 3) : nullptr;
  auto g = mat_geom(c, a.shape, b.shape);
  if (!g) return g.error();
  if (az && az->numel() != 1) return c.err("input '" + c.n.in(2) + "'", "per-row a zero points are not supported");
  if (bz && bz->numel() != 1 && bz->numel() != g->N)
    return c.err("input '" + c.n.in(qlinear ? 5 : 3) + "'",
                 "b zero point has " + std::to_string(bz->numel()) + " values; expected 1 or " + std::to_string(g->N));
  if (qlinear && c.in(4).numel() != 1 && c.in(4).numel() != g->N)
    return c.err("input '" + c.n.in(4) + "'",
                 "b scale has " + std::to_string(c.in(4).numel()) + " values; expected 1 or " + std::to_string(g->N));
  const int64_t a0 = param_i(az, 0);
  Value y = Value::make(qlinear ? (c.has(7) ? c.in(7).type : a.type) : kInt32, g->out);
  const Value* bias = qlinear && c.n.inputs.size() > 8 && c.has(8) ? &c.in(8) : nullptr;
  mat_loop<int64_t>(
      *g, [&](int64_t k) { return a.i[size_t(k)] - a0; },
      [&](int64_t k, int64_t j) { return b.i[size_t(k)] - param_i(bz, j); },
      [&](int64_t o, int64_t j, int64_t s) {
        int64_t acc = int64_t(int32_t(uint32_t(uint64_t(s))));
        if (!qlinear) {
          y.i[size_t(o)] = acc;
          return;
        }
        if (bias) acc = int64_t(int32_t(uint32_t(uint64_t(acc + bias->i[size_t(j)]))));
        y.i[size_t(o)] =
            requant(acc, c.in(1).f[0], param_f(c.in(4), j), c.in(6).f[0], c.has(7) ? c.in(7).i[0] : 0, y.type);
      });
  c.out(0, std::move(y));
  return {};
}

Status matmul_float(const Ctx& c) {
  const Value& a = c.in(0);
  const Value& b = c.in(1);
  auto g = mat_geom(c, a.shape, b.shape);
  if (!g) return g.error();
  Value y = Value::make(kFloat, g->out);
  mat_loop<double>(
      *g, [&](int64_t k) { return double(a.f[size_t(k)]); }, [&](int64_t k, int64_t) { return double(b.f[size_t(k)]); },
      [&](int64_t o, int64_t, double s) { y.f[size_t(o)] = float(s); });
  c.out(0, std::move(y));
  return {};
}

// ---- elementwise ----------------------------------------------------------

Status binary(const Ctx& c) {
  const Value& a = c.in(0);
  const Value& b = c.in(1);
  if (a.type != b.type) return c.err("inputs", "types differ: " + elem_name(a.type) + " and " + elem_name(b.type));
  std::vector<int64_t> os;
  if (!broadcast_shape(a.shape, b.shape, &os))
    return c.err("inputs", shape_str(a.shape) + " and " + shape_str(b.shape) + " do not broadcast");
  auto ai = broadcast_index(a.shape, os), bi = broadcast_index(b.shape, os);
  Value y = Value::make(a.type, os);
  const std::string& op = c.n.op;
  for (size_t k = 0; k < ai.size(); ++k) {
    if (a.is_float()) {
      const float x = a.f[size_t(ai[k])], z = b.f[size_t(bi[k])];
      y.f[k] = op == "Add" ? x + z : op == "Sub" ? x - z : op == "Mul" ? x * z : x / z;
    } else {
      const int64_t x = a.i[size_t(ai[k])], z = b.i[size_t(bi[k])];
      int64_t v;
      if (op == "Div") {
        if (z == 0) return c.err("input '" + c.n.in(1) + "'", "integer division by zero");
        v = x / z;
      } else {
        v = op == "Add" ? x + z : op == "Sub" ? x - z : x * z;
      }
      // Integer arithmetic wraps in the element type.
      if (a.type == kInt32) v = int64_t(int32_t(uint32_t(uint64_t(v))));
      if (a.type == kInt8) v = int64_t(int8_t(uint8_t(uint64_t(v))));
      if (a.type == kUint8) v = int64_t(uint8_t(uint64_t(v)));
      y.i[k] = v;
    }
  }
  c.out(0, std::move(y));
  return {};
}

Status unary(const Ctx& c) {
  const Value& x = c.in(0);
  Value y = x;
  const std::string& op = c.n.op;
  if (op == "Relu") {
    for (auto& v : y.f) v = std::max(v, 0.0f);
    for (auto& v : y.i) v = std::max<int64_t>(v, 0);
  } else if (op == "Identity") {
  } else if (op == "Neg") {
    for (auto& v : y.f) v = -v;
    for (auto& v : y.i) v = saturate(-v, y.type) == -v ? -v : v;
  } else if (op == "Abs") {
    for (auto& v : y.f) v = std::fabs(v);
    for (auto& v : y.i) v = v < 0 && saturate(-v, y.type) == -v ? -v : v;
  } else {
    if (!x.is_float()) return c.err("input '" + c.n.in(0) + "'", op + " on " + elem_name(x.type) + " is not supported");
    for (auto& v : y.f) {
      if (op == "Sigmoid")
        v = float(1.0 / (1.0 + std::exp(-double(v))));
      else if (op == "Tanh")
        v = std::tanh(v);
      else if (op == "Erf")
        v = std::erf(v);
      else if (op == "Exp")
        v = std::exp(v);
      else if (op == "Log")
        v = std::log(v);
      else if (op == "Sqrt")
        v = std::sqrt(v);
      else if (op == "Reciprocal")
        v = 1.0f / v;
    }
  }
  c.out(0, std::move(y));
  return {};
}

Status clip(const Ctx& c) {
  const Value& x = c.in(0);
  Value y = x;
  double lo = -INFINITY, hi = INFINITY;
  if (c.m.opset < 11) {
    lo = c.n.get_f("min", -3.402823e38f);
    hi = c.n.get_f("max", 3.402823e38f);
  } else {
    if (c.has(1)) lo = c.in(1).at(0);
    if (c.has(2)) hi = c.in(2).at(0);
  }
  for (auto& v : y.f) v = float(std::min(std::max(double(v), lo), hi));
  for (auto& v : y.i) {
    if (double(v) < lo) v = int64_t(lo);
    if (double(v) > hi) v = int64_t(hi);
  }
  c.out(0, std::move(y));
  return {};
}

// ---- pooling --------------------------------------------------------------

Status pool(const Ctx& c) {
  const Value& x = c.in(0);
  const std::string& op = c.n.op;
  const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
  const bool is_max = op == "MaxPool" || op == "GlobalMaxPool";
  if (x.shape.size() < 3)
    return c.err("input '" + c.n.in(0) + "'", "pooling needs rank >= 3, got " + shape_str(x.shape));
  if (!is_max && !x.is_float())
    return c.err("input '" + c.n.in(0) + "'", op + " on " + elem_name(x.type) + " is not supported");
  const size_t sd = x.shape.size() - 2;
  std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end());
  std::vector<int64_t> k = global ? in : c.n.get_ints("kernel_shape");
  if (k.size() != sd) return c.err("attribute 'kernel_shape'", "needs " + std::to_string(sd) + " values");
  std::vector<int64_t> s = global ? std::vector<int64_t>(sd, 1) : c.n.get_ints("strides", std::vector<int64_t>(sd, 1));
  std::vector<int64_t> d =
      global ? std::vector<int64_t>(sd, 1) : c.n.get_ints("dilations", std::vector<int64_t>(sd, 1));
  std::vector<int64_t> p =
      global ? std::vector<int64_t>(2 * sd, 0) : c.n.get_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (s.size() != sd || d.size() != sd || p.size() != 2 * sd)
    return c.err("attributes", "strides/dilations/pads do not match the rank");
  const bool ceil_mode = c.n.get_i("ceil_mode", 0) != 0;
  const bool include_pad = c.n.get_i("count_include_pad", 0) != 0;
  const bool col_major = c.n.get_i("storage_order", 0) != 0;  // only changes MaxPool's Indices
  if (col_major && sd != 2) return c.err("attribute 'storage_order'", "1 is supported for 2-D pooling only");
  const std::string ap = global ? "NOTSET" : c.n.get_s("auto_pad", "NOTSET");
  std::vector<int64_t> out(sd), pb(sd), pe(sd);
  for (size_t a = 0; a < sd; ++a) {
    if (k[a] < 1 || s[a] < 1 || d[a] < 1 || p[a] < 0 || p[a + sd] < 0)
      return c.err("attributes", "kernel, strides and dilations must be >= 1, pads >= 0");
    LOOM_TRY(spatial(c, ap, in[a], k[a], s[a], d[a], p[a], p[a + sd], ceil_mode, &out[a], &pb[a]));
    pe[a] =
        ap == "NOTSET" ? p[a + sd] : std::max<int64_t>((out[a] - 1) * s[a] + (k[a] - 1) * d[a] + 1 - in[a] - pb[a], 0);
  }
  std::vector<int64_t> oshape{x.shape[0], x.shape[1]};
  oshape.insert(oshape.end(), out.begin(), out.end());
  Value y = Value::make(x.type, oshape);
  Value ind = Value::make(kInt64, oshape);  // MaxPool's optional Indices (row-major over the whole input)
  int64_t plane_in = 1, plane_out = 1, win = 1;
  for (size_t a = 0; a < sd; ++a) plane_in *= in[a], plane_out *= out[a], win *= k[a];
  const auto ist = strides_of(in), ost = strides_of(out), kst = strides_of(k);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t o = 0; o < plane_out; ++o) {
      double best = -INFINITY, sum = 0;
      int64_t count = 0, best_i = INT64_MIN, best_at = -1;
      for (int64_t w = 0; w < win; ++w) {
        int64_t off = 0;
        bool inside = true, in_pad = true;
        for (size_t a = 0; a < sd; ++a) {
          const int64_t oc = (o / ost[a]) % out[a], kc = (w / kst[a]) % k[a];
          const int64_t ic = oc * s[a] - pb[a] + kc * d[a];
          if (ic < 0 || ic >= in[a]) inside = false;
          if (ic < -pb[a] || ic >= in[a] + pe[a]) in_pad = false;
          off += ic * ist[a];
        }
        if (!inside) {
          if (include_pad && in_pad) ++count;
          continue;
        }
        const int64_t idx = nc * plane_in + off;
        ++count;
        if (x.is_float()) {
          if (double(x.f[size_t(idx)]) > best || best_at < 0) best_at = idx;
          best = std::max(best, double(x.f[size_t(idx)]));
          sum += double(x.f[size_t(idx)]);
        } else {
          if (x.i[size_t(idx)] > best_i) best_at = idx;
          best_i = std::max(best_i, x.i[size_t(idx)]);
        }
      }
      const int64_t yi = nc * plane_out + o;
      if (col_major && best_at >= 0) {
        const int64_t off = best_at - nc * plane_in;
        best_at = nc * plane_in + (off / in[1]) + (off % in[1]) * in[0];
      }
      ind.i[size_t(yi)] = best_at;
      if (is_max) {
        if (x.is_float())
          y.f[size_t(yi)] = float(best);
        else
          y.i[size_t(yi)] = best_i;
      } else {
        y.f[size_t(yi)] = count ? float(sum / double(count)) : 0.0f;
      }
    }
  c.out(0, std::move(y));
  if (is_max) c.out(1, std::move(ind));
  return {};
}

// ---- shape ops ------------------------------------------------------------

Status reshape(const Ctx& c) {
  const Value& x = c.in(0);
  std::vector<int64_t> shape;
  if (c.n.op == "Reshape") {
    const Value& s = c.in(1);
    const bool allowzero = c.n.get_i("allowzero", 0) != 0;
    int64_t known = 1, neg = -1;
    for (int64_t k = 0; k < s.numel(); ++k) {
      int64_t d = s.i[size_t(k)];
      if (d == 0 && !allowzero) {
        if (k >= int64_t(x.shape.size()))
          return c.err("input '" + c.n.in(1) + "'", "0 copies a dimension the input does not have");
        d = x.shape[size_t(k)];
      }
      if (d == -1) {
        if (neg >= 0) return c.err("input '" + c.n.in(1) + "'", "more than one -1");
        neg = k;
      } else if (d < 1) {
        return c.err("input '" + c.n.in(1) + "'", "dimension " + std::to_string(d) + " is not supported");
      } else {
        known *= d;
      }
      shape.push_back(d);
    }
    if (neg >= 0) {
      if (known == 0 || x.numel() % known) return c.err("input '" + c.n.in(1) + "'", "cannot infer the -1 dimension");
      shape[size_t(neg)] = x.numel() / known;
    }
  } else if (c.n.op == "Flatten") {
    const int64_t axis = norm_axis(c.n.get_i("axis", 1), x.shape.size());
    if (axis < 0 || axis > int64_t(x.shape.size())) return c.err("attribute 'axis'", "out of range");
    int64_t a = 1, b = 1;
    for (int64_t k = 0; k < int64_t(x.shape.size()); ++k) (k < axis ? a : b) *= x.shape[size_t(k)];
    shape = {a, b};
  } else {  // Squeeze / Unsqueeze
    std::vector<int64_t> axes = c.n.get_ints("axes");
    if (c.has(1)) axes = c.in(1).i;
    if (c.n.op == "Squeeze") {
      std::set<int64_t> ax;
      for (auto a : axes) {
        const int64_t na = norm_axis(a, x.shape.size());
        if (na < 0 || na >= int64_t(x.shape.size()))
          return c.err("axes", "axis " + std::to_string(a) + " is out of range");
        ax.insert(na);
      }
      for (int64_t k = 0; k < int64_t(x.shape.size()); ++k) {
        const bool drop = axes.empty() ? x.shape[size_t(k)] == 1 : ax.count(k) != 0;
        if (drop && x.shape[size_t(k)] != 1) return c.err("axes", "dimension " + std::to_string(k) + " is not 1");
        if (!drop) shape.push_back(x.shape[size_t(k)]);
      }
    } else {
      const size_t r = x.shape.size() + axes.size();
      std::set<int64_t> ax;
      for (auto a : axes) {
        const int64_t na = norm_axis(a, r);
        if (na < 0 || na >= int64_t(r) || !ax.insert(na).second)
          return c.err("axes", "axis " + std::to_string(a) + " is out of range or repeated");
      }
      size_t j = 0;
      for (int64_t k = 0; k < int64_t(r); ++k) shape.push_back(ax.count(k) ? 1 : x.shape[j++]);
    }
  }
  const int64_t n = shape_numel(shape);
  if (n != x.numel())
    return c.err("input '" + c.n.in(1) + "'", "cannot reshape " + shape_str(x.shape) + " to " + shape_str(shape));
  Value y = x;
  y.shape = shape;
  c.out(0, std::move(y));
  return {};
}

Status transpose(const Ctx& c) {
  const Value& x = c.in(0);
  const size_t r = x.shape.size();
  std::vector<int64_t> perm = c.n.get_ints("perm");
  if (perm.empty())
    for (size_t k = 0; k < r; ++k) perm.push_back(int64_t(r - 1 - k));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < r; ++k)
    if (sorted.size() != r || sorted[k] != int64_t(k))
      return c.err("attribute 'perm'", "is not a permutation of the axes");
  std::vector<int64_t> os(r);
  for (size_t k = 0; k < r; ++k) os[k] = x.shape[size_t(perm[k])];
  const auto ist = strides_of(x.shape), ost = strides_of(os);
  Value y = Value::make(x.type, os);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t src = 0;
    for (size_t k = 0; k < r; ++k) src += ((o / ost[k]) % os[k]) * ist[size_t(perm[k])];
    if (x.is_float())
      y.f[size_t(o)] = x.f[size_t(src)];
    else
      y.i[size_t(o)] = x.i[size_t(src)];
  }
  c.out(0, std::move(y));
  return {};
}

Status softmax(const Ctx& c) {
  const Value& x = c.in(0);
  if (!x.is_float()) return c.err("input '" + c.n.in(0) + "'", "Softmax needs float32");
  const size_t r = x.shape.size();
  const int64_t axis = norm_axis(c.n.get_i("axis", c.m.opset >= 13 ? -1 : 1), r);
  if (axis < 0 || axis >= int64_t(r)) return c.err("attribute 'axis'", "out of range");
  Value y = x;
  const bool log = c.n.op == "LogSoftmax";
  // opset >= 13: along one axis; earlier: over the flattened trailing axes.
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t k = 0; k < int64_t(r); ++k) {
    if (k < axis)
      outer *= x.shape[size_t(k)];
    else if (k == axis || c.m.opset < 13)
      len *= x.shape[size_t(k)];
    else
      inner *= x.shape[size_t(k)];
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t l) { return size_t((o * len + l) * inner + in); };
      double mx = -INFINITY, sum = 0;
      for (int64_t l = 0; l < len; ++l) mx = std::max(mx, double(x.f[at(l)]));
      for (int64_t l = 0; l < len; ++l) sum += std::exp(double(x.f[at(l)]) - mx);
      for (int64_t l = 0; l < len; ++l) {
        const double v = double(x.f[at(l)]) - mx;
        y.f[at(l)] = float(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  c.out(0, std::move(y));
  return {};
}

Status gather(const Ctx& c) {
  const Value& x = c.in(0);
  const Value& idx = c.in(1);
  const size_t r = x.shape.size();
  const int64_t axis = norm_axis(c.n.get_i("axis", 0), r);
  if (axis < 0 || axis >= int64_t(r)) return c.err("attribute 'axis'", "out of range");
  std::vector<int64_t> os(x.shape.begin(), x.shape.begin() + axis);
  os.insert(os.end(), idx.shape.begin(), idx.shape.end());
  os.insert(os.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.shape[size_t(k)];
  for (size_t k = size_t(axis) + 1; k < r; ++k) inner *= x.shape[k];
  const int64_t dim = x.shape[size_t(axis)];
  Value y = Value::make(x.type, os);
  int64_t o = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < idx.numel(); ++j) {
      int64_t t = idx.i[size_t(j)];
      if (t < 0) t += dim;
      if (t < 0 || t >= dim)
        return c.err("input '" + c.n.in(1) + "'", "index " + std::to_string(idx.i[size_t(j)]) + " is out of range");
      for (int64_t b = 0; b < inner; ++b, ++o) {
        const int64_t src = (a * dim + t) * inner + b;
        if (x.is_float())
          y.f[size_t(o)] = x.f[size_t(src)];
        else
          y.i[size_t(o)] = x.i[size_t(src)];
      }
    }
  c.out(0, std::move(y));
  return {};
}

// com.microsoft QLinearAdd / QLinearMul (inputs a, as, az, b, bs, bz, ys, yz;
// numpy broadcasting): y = saturate(round(f(a - az, b - bz)) + yz), with f
// evaluated in float32 as ONNX Runtime's kernels do.
template <typename F>
Status qlinear_binary(const Ctx& c, F f) {
  const Value& a = c.in(0);
  const Value& b = c.in(3);
  std::vector<int64_t> os;
  if (!broadcast_shape(a.shape, b.shape, &os)) return c.err("inputs", "shapes do not broadcast");
  auto ai = broadcast_index(a.shape, os), bi = broadcast_index(b.shape, os);
  const int64_t az = c.has(2) ? c.in(2).i[0] : 0, bz = c.has(5) ? c.in(5).i[0] : 0, yz = c.has(7) ? c.in(7).i[0] : 0;
  Value y = Value::make(a.type, os);
  for (size_t k = 0; k < ai.size(); ++k) {
    const float v = f(float(a.i[size_t(ai[k])] - az), float(b.i[size_t(bi[k])] - bz));
    y.i[k] = saturate(to_int64(std::nearbyint(double(v))) + yz, a.type);
  }
  c.out(0, std::move(y));
  return {};
}

// QLinearAdd: f = (as da + bs db) / ys.
Status qlinear_add(const Ctx& c) {
  const float as = c.in(1).f[0], bs = c.in(4).f[0], ys = c.in(6).f[0];
  return qlinear_binary(c, [=](float da, float db) { return (as * da + bs * db) / ys; });
}

// QLinearMul: f = da db (as bs / ys), the ratio formed first as in MLAS.
Status qlinear_mul(const Ctx& c) {
  const float ratio = c.in(1).f[0] * c.in(4).f[0] / c.in(6).f[0];
  return qlinear_binary(c, [=](float da, float db) { return da * db * ratio; });
}

// com.microsoft QLinearGlobalAveragePool (NCHW): y = saturate(round(xs/ys * mean(x - xz)) + yz).
Status qlinear_gap(const Ctx& c) {
  const Value& x = c.in(0);
  if (c.n.get_i("channels_last", 0) != 0) return c.err("attribute 'channels_last'", "only 0 is supported");
  if (x.shape.size() < 3) return c.err("input '" + c.n.in(0) + "'", "needs rank >= 3");
  int64_t plane = 1;
  for (size_t k = 2; k < x.shape.size(); ++k) plane *= x.shape[k];
  std::vector<int64_t> os{x.shape[0], x.shape[1]};
  os.resize(x.shape.size(), 1);
  const float xs = c.in(1).f[0], ys = c.in(3).f[0];
  const int64_t xz = c.has(2) ? c.in(2).i[0] : 0, yz = c.has(4) ? c.in(4).i[0] : 0;
  Value y = Value::make(x.type, os);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc) {
    int64_t sum = 0;
    for (int64_t k = 0; k < plane; ++k) sum += x.i[size_t(nc * plane + k)] - xz;
    const float v = float(sum) * (xs / ys / float(plane));
    y.i[size_t(nc)] = saturate(to_int64(std::nearbyint(double(v))) + yz, x.type);
  }
  c.out(0, std::move(y));
  return {};
}

// com.microsoft QLinearAveragePool (X, x_scale, x_zp, y_scale, y_zp; the
// AveragePool attributes): the float pool of the dequantized input,
// requantized (ONNX Runtime's reference semantics).
Status qlinear_avgpool(const Ctx& c) {
  const Value& x = c.in(0);
  const float xs = c.in(1).f.at(0), ys = c.in(3).f.at(0);
  const int64_t xz = c.has(2) ? c.in(2).i.at(0) : 0, yz = c.has(4) ? c.in(4).i.at(0) : 0;
  if (x.is_float()) return c.err("input '" + c.n.in(0) + "'", "must be an integer tensor");
  std::map<std::string, Value> env;
  Value xf = Value::make(kFloat, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) xf.f[size_t(k)] = xs * float(x.i[size_t(k)] - xz);
  env["x"] = std::move(xf);
  Node p = c.n;
  p.op = "AveragePool";
  p.domain.clear();
  p.inputs = {"x"};
  p.outputs = {"y"};
  LOOM_TRY(pool(Ctx{c.m, p, env}));
  const Value& yf = env.at("y");
  Value y = Value::make(x.type, yf.shape);
  for (int64_t k = 0; k < yf.numel(); ++k)
    y.i[size_t(k)] = saturate(to_int64(std::nearbyint(double(yf.f[size_t(k)] / ys))) + yz, x.type);
  c.out(0, std::move(y));
  return {};
}

Status layer_norm(const Ctx& c) {
  const Value& x = c.in(0);
  if (!x.is_float()) return c.err("input '" + c.n.in(0) + "'", "LayerNormalization needs float32");
  const int64_t axis = norm_axis(c.n.get_i("axis", -1), x.shape.size());
  if (axis < 0 || axis >= int64_t(x.shape.size())) return c.err("attribute 'axis'", "out of range");
  const double eps = c.n.get_f("epsilon", 1e-5f);
  int64_t outer = 1, len = 1;
  for (int64_t k = 0; k < int64_t(x.shape.size()); ++k) (k < axis ? outer : len) *= x.shape[size_t(k)];
  const Value& sc = c.in(1);
  std::vector<int64_t> ls(x.shape.begin() + axis, x.shape.end()), bs;
  for (size_t k = 1; k < 3; ++k)
    if (c.has(k) && (!broadcast_shape(c.in(k).shape, ls, &bs) || bs != ls))
      return c.err("input '" + c.n.in(k) + "'", shape_str(c.in(k).shape) + " does not broadcast to " + shape_str(ls));
  auto si = broadcast_index(sc.shape, ls);
  std::vector<int64_t> bi;
  if (c.has(2)) bi = broadcast_index(c.in(2).shape, ls);
  Value y = x;
  std::vector<int64_t> stat_shape(x.shape.begin(), x.shape.begin() + axis);
  stat_shape.resize(x.shape.size(), 1);
  Value mean_v = Value::make(kFloat, stat_shape), inv_v = Value::make(kFloat, stat_shape);
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    for (int64_t l = 0; l < len; ++l) mean += x.f[size_t(o * len + l)];
    mean /= double(len);
    for (int64_t l = 0; l < len; ++l) var += (x.f[size_t(o * len + l)] - mean) * (x.f[size_t(o * len + l)] - mean);
    var /= double(len);
    const double inv = 1.0 / std::sqrt(var + eps);
    mean_v.f[size_t(o)] = float(mean);
    inv_v.f[size_t(o)] = float(inv);
    for (int64_t l = 0; l < len; ++l) {
      double v = (x.f[size_t(o * len + l)] - mean) * inv * sc.f[size_t(si[size_t(l)])];
      if (c.has(2)) v += c.in(2).f[size_t(bi[size_t(l)])];
      y.f[size_t(o * len + l)] = float(v);
    }
  }
  c.out(0, std::move(y));
  c.out(1, std::move(mean_v));
  c.out(2, std::move(inv_v));
  return {};
}

// loom QLinearLookup (x, xs, xz, table, ys, yz): y = table[x - min(x's type)],
// the table holding the output for every input value (the fold of a
// DequantizeLinear -> float elementwise ops -> QuantizeLinear chain, computed
// with these host ops at import, so both paths give the same integers).
Status qlinear_lookup(const Ctx& c) {
  const Value& x = c.in(0);
  const Value& t = c.in(3);
  int64_t lo = 0, hi = 0;
  elem_range(x.type, &lo, &hi);
  if (hi - lo != 255 || t.numel() != 256) return c.err("inputs", "expects an 8-bit input and a 256-entry table");
  Value y = Value::make(t.type, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) y.i[size_t(k)] = t.i[size_t(x.i[size_t(k)] - lo)];
  c.out(0, std::move(y));
  return {};
}

// loom QLinearSoftmax (x, xs, xz, ys, yz) and QLinearLayerNorm (x, xs, xz,
// gamma, beta, ys, yz; epsilon) over the last axis: the integer row
// normalizations of common/rownorm.h (the ROWNORM instruction), on 8-bit
// values shifted to int8 codes, with the parameters the device mapping
// derives, so both paths give the same integers.
Status qlinear_row(const Ctx& c) {
  const bool ln = c.n.op == "QLinearLayerNorm";
  const Value& x = c.in(0);
  const Value& xs = c.in(1);
  const Value& xz = c.in(2);
  const Value& ys = c.in(ln ? 5 : 3);
  const Value& yz = c.in(ln ? 6 : 4);
  int64_t xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  elem_range(x.type, &xlo, &xhi);
  elem_range(yz.type, &ylo, &yhi);
  if (xhi - xlo != 255 || yhi - ylo != 255 || xz.type != x.type || xs.numel() != 1 || xz.numel() != 1 ||
      ys.numel() != 1 || yz.numel() != 1)
    return c.err("inputs", "expects 8-bit per-tensor input and output quantization");
  const int64_t n = x.shape.empty() ? 1 : x.shape.back();
  if (n < 1 || n > 65535) return c.err("input '" + c.n.in(0) + "'", "the last axis must hold 1..65535 elements");
  const int64_t xoff = xlo + 128, yoff = ylo + 128;  // uint8 values are int8 codes + 128
  const int32_t x_zp = int32_t(xz.i[0] - xoff), y_zp = int32_t(yz.i[0] - yoff);
  std::string why;
  SoftmaxParams sp;
  std::vector<LayerNormChannel> ch;
  uint32_t eps = 0;
  if (ln) {
    const Value& g = c.in(3);
    const Value& b = c.in(4);
    if (!g.is_float() || !b.is_float() || g.numel() != n || b.numel() != n)
      return c.err("inputs", "gamma and beta must be float32 with one value per channel");
    std::vector<float> gv(g.f.begin(), g.f.end()), bv(b.f.begin(), b.f.end());
    if (!layernorm_channels(gv, bv, ys.at(0), &ch, &why) ||
        !layernorm_eps(c.n.get_f("epsilon", 1e-5f), xs.at(0), uint64_t(n), &eps, &why))
      return c.err("", why);
  } else if (!softmax_params(xs.at(0), ys.at(0), &sp, &why)) {
    return c.err("", why);
  }
  Value y = Value::make(yz.type, x.shape);
  std::vector<int8_t> xr(static_cast<size_t>(n)), yr(static_cast<size_t>(n));
  for (int64_t r = 0; r * n < x.numel(); ++r) {
    for (int64_t j = 0; j < n; ++j) xr[size_t(j)] = int8_t(x.i[size_t(r * n + j)] - xoff);
    if (ln)
      layernorm_row(xr.data(), uint64_t(n), x_zp, eps, ch.data(), y_zp, -128, 127, yr.data());
    else
      softmax_row(xr.data(), uint64_t(n), sp.table.data(), sp.mult, sp.shift, y_zp, -128, 127, yr.data());
    for (int64_t j = 0; j < n; ++j) y.i[size_t(r * n + j)] = int64_t(yr[size_t(j)]) + yoff;
  }
  c.out(0, std::move(y));
  return {};
}

const std::map<std::string, Fn>& table() {
  static const std::map<std::string, Fn> t = [] {
    std::map<std::string, Fn> t = {
        {"QuantizeLinear", quantize_linear},
        {"DequantizeLinear", dequantize_linear},
        {"QLinearConv", [](const Ctx& c) { return conv_integer_like(c, true); }},
        {"ConvInteger", [](const Ctx& c) { return conv_integer_like(c, false); }},
        {"Conv", conv_float},
        {"QLinearMatMul", [](const Ctx& c) { return matmul_integer_like(c, true); }},
        {"MatMulInteger", [](const Ctx& c) { return matmul_integer_like(c, false); }},
        {"MatMul", matmul_float},
        {"Add", binary},
        {"Sub", binary},
        {"Mul", binary},
        {"Div", binary},
        {"Relu", unary},
        {"Identity", unary},
        {"Neg", unary},
        {"Abs", unary},
        {"Sigmoid", unary},
        {"Tanh", unary},
        {"Erf", unary},
        {"Exp", unary},
        {"Log", unary},
        {"Sqrt", unary},
        {"Reciprocal", unary},
        {"Clip", clip},
        {"MaxPool", pool},
        {"AveragePool", pool},
        {"GlobalAveragePool", pool},
        {"GlobalMaxPool", pool},
        {"Reshape", reshape},
        {"Flatten", reshape},
        {"Squeeze", reshape},
        {"Unsqueeze", reshape},
        {"Transpose", transpose},
        {"Softmax", softmax},
        {"LogSoftmax", softmax},
        {"Gather", gather},
        {"LayerNormalization", layer_norm},
        {"com.microsoft.QLinearAdd", qlinear_add},
        {"com.microsoft.QLinearMul", qlinear_mul},
        {"com.microsoft.QLinearGlobalAveragePool", qlinear_gap},
        {"com.microsoft.QLinearAveragePool", qlinear_avgpool},
        {"loom.QLinearMatMul", [](const Ctx& c) { return matmul_integer_like(c, true); }},
        {"loom.QLinearConv", [](const Ctx& c) { return conv_integer_like(c, true); }},
        {"loom.QLinearLookup", qlinear_lookup},
        {"loom.QLinearSoftmax", qlinear_row},
        {"loom.QLinearLayerNorm", qlinear_row},
    };
    for (const auto& [k, f] : layout_ops()) t.emplace(k, f);
    return t;
  }();
  return t;
}

std::string key(const Node& n) { return n.domain.empty() ? n.op : n.domain + "." + n.op; }

}  // namespace

const std::string* operand_kinds(const Node& n) {
  static const std::map<std::string, std::string> sig = {{"QuantizeLinear", ".sz"},
                                                         {"DequantizeLinear", "isz"},
                                                         {"QLinearConv", "isziszszi"},
                                                         {"ConvInteger", "iizz"},
                                                         {"Conv", "fff"},
                                                         {"QLinearMatMul", "isziszszi"},
                                                         {"MatMulInteger", "iizz"},
                                                         {"MatMul", "ff"},
                                                         {"Softmax", "f"},
                                                         {"LogSoftmax", "f"},
                                                         {"LayerNormalization", "fff"},
                                                         {"Reshape", ".i"},
                                                         {"Gather", ".i"},
                                                         {"Squeeze", ".i"},
                                                         {"Unsqueeze", ".i"},
                                                         {"com.microsoft.QLinearAdd", "isziszsz"},
                                                         {"com.microsoft.QLinearMul", "isziszsz"},
                                                         {"com.microsoft.QLinearGlobalAveragePool", "iszsz"},
                                                         {"loom.QLinearMatMul", "isziszszi"},
                                                         {"loom.QLinearConv", "isziszszi"},
                                                         {"loom.QLinearLookup", "iszisz"},
                                                         {"loom.QLinearResize", "iszsz.fi"},
                                                         {"loom.QLinearSoftmax", "iszsz"},
                                                         {"loom.QLinearLayerNorm", "iszffsz"}};
  auto it = sig.find(key(n));
  return it == sig.end() ? nullptr : &it->second;
}

Status check_scales(const Value& v, const std::string& where) {
  if (!v.is_float()) return {};
  for (int64_t k = 0; k < v.numel(); ++k) {
    const double x = v.at(k);
    if (!std::isfinite(x) || !(x > 0))
      return make_error(where, "a quantization scale must be finite and > 0, got " + std::to_string(x) +
                                   (v.numel() > 1 ? " at index " + std::to_string(k) : ""));
  }
  return {};
}

bool host_supports(const Node& n, int64_t, std::string* why) {
  if (!table().count(key(n))) {
    if (why) *why = "no host implementation of " + key(n);
    return false;
  }
  return true;
}

Status run_host(const Model& m, const Node& n, std::map<std::string, Value>& env) {
  auto it = table().find(key(n));
  if (it == table().end())
    return make_error(m.where(n), "op " + key(n) + " is supported neither by the fabric nor by the host fallback");
  for (const auto& i : n.inputs)
    if (!i.empty() && !env.count(i)) return make_error(m.where(n) + ": input '" + i + "'", "has no value");
  if (const std::string* kinds = operand_kinds(n)) {
    for (size_t k = 0; k < n.inputs.size() && k < kinds->size(); ++k) {
      if (n.inputs[k].empty()) continue;
      const Value& v = env.at(n.inputs[k]);
      const char want = (*kinds)[k];
      const bool ok = want == '.' || ((want == 'f' || want == 's') && v.is_float()) ||
                      ((want == 'i' || want == 'z') && !v.is_float());
      if (!ok || ((want == 's' || want == 'z') && v.numel() < 1))
        return make_error(m.where(n) + ": input '" + n.inputs[k] + "'",
                          std::string(want == 's'   ? "a scale must be float32"
                                      : want == 'z' ? "a zero point must be an integer type"
                                      : want == 'f' ? "must be float32"
                                                    : "must be an integer type") +
                              ", got " + elem_name(v.type));
      if (want == 's') LOOM_TRY(check_scales(v, m.where(n) + ": input '" + n.inputs[k] + "'"));
    }
  }
  Ctx c{m, n, env};
  try {
    return it->second(c);
  } catch (const std::out_of_range& e) {
    return make_error(m.where(n), "inconsistent operands (" + exception_text(e.what()) + ")");
  } catch (const std::length_error& e) {
    return make_error(m.where(n), exception_text(e.what()));
  }
}

}  // namespace loom::onnxfe
