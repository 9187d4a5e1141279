// Host kernels for layout ops (Concat, Split, Slice, Shape, Cast), Resize,
// reductions, per-channel BatchNormalization and the piecewise and smooth
// activations (HardSigmoid, HardSwish, Softplus, Pow), from the ONNX operator
// specification (opset 13-17 forms; newer exports reach them through
// opset_adapt.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <type_traits>

#include "frontend/onnx/host_kernels.h"
#include "frontend/onnx/resize_taps.h"

namespace loom::onnxfe::hostk {

namespace {

void copy_elem(const Value& x, int64_t src, Value& y, int64_t dst) {
  if (x.is_float())
    y.f[size_t(dst)] = x.f[size_t(src)];
  else
    y.i[size_t(dst)] = x.i[size_t(src)];
}

/// outer x dim x inner view of a shape around `axis`.
void around(const std::vector<int64_t>& s, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1, *inner = 1;
  for (int64_t k = 0; k < int64_t(s.size()); ++k) {
    if (k < axis) *outer *= s[size_t(k)];
    if (k > axis) *inner *= s[size_t(k)];
  }
}

Status concat(const Ctx& c) {
  const Value& x0 = c.in(0);
  const size_t r = x0.shape.size();
  const int64_t axis = norm_axis(c.n.get_i("axis", 0), r);
  if (r == 0 || axis < 0 || axis >= int64_t(r))
    return c.err("attribute 'axis'", "out of range for rank " + std::to_string(r));
  std::vector<int64_t> os = x0.shape;
  os[size_t(axis)] = 0;
  for (size_t k = 0; k < c.n.inputs.size(); ++k) {
    if (!c.has(k)) continue;
    const Value& x = c.in(k);
    bool same = x.type == x0.type && x.shape.size() == r;
    for (size_t d = 0; same && d < r; ++d) same = int64_t(d) == axis || x.shape[d] == x0.shape[d];
    if (!same)
      return c.err("input '" + c.n.in(k) + "'", shape_str(x.shape) + " does not concatenate with " +
                                                    shape_str(x0.shape) + " on axis " + std::to_string(axis));
    os[size_t(axis)] += x.shape[size_t(axis)];
  }
  Value y = Value::make(x0.type, os);
  int64_t outer, inner;
  around(os, axis, &outer, &inner);
  int64_t at = 0;  // offset along the axis
  for (size_t k = 0; k < c.n.inputs.size(); ++k) {
    if (!c.has(k)) continue;
    const Value& x = c.in(k);
    const int64_t d = x.shape[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < d * inner; ++j)
        copy_elem(x, o * d * inner + j, y, (o * os[size_t(axis)] + at) * inner + j);
    at += d;
  }
  c.out(0, std::move(y));
  return {};
}

Status split(const Ctx& c) {
  const Value& x = c.in(0);
  const size_t r = x.shape.size();
  const int64_t axis = norm_axis(c.n.get_i("axis", 0), r);
  if (axis < 0 || axis >= int64_t(r)) return c.err("attribute 'axis'", "out of range for rank " + std::to_string(r));
  const int64_t dim = x.shape[size_t(axis)];
  const int64_t parts = int64_t(c.n.outputs.size());
  std::vector<int64_t> sizes = c.n.get_ints("split");
  if (c.has(1)) sizes = c.in(1).i;
  if (sizes.empty()) {
    if (dim % parts)
      return c.err("input '" + c.n.in(0) + "'", "dimension " + std::to_string(dim) + " does not split into " +
                                                    std::to_string(parts) + " equal parts");
    sizes.assign(size_t(parts), dim / parts);
  }
  if (int64_t(sizes.size()) != parts || std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim ||
      std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 1; }))
    return c.err("split", "sizes do not add up to dimension " + std::to_string(dim) + " in " + std::to_string(parts) +
                              " parts of at least 1");
  int64_t outer, inner;
  around(x.shape, axis, &outer, &inner);
  int64_t at = 0;
  for (int64_t p = 0; p < parts; ++p) {
    std::vector<int64_t> os = x.shape;
    os[size_t(axis)] = sizes[size_t(p)];
    Value y = Value::make(x.type, os);
    const int64_t d = sizes[size_t(p)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < d * inner; ++j) copy_elem(x, (o * dim + at) * inner + j, y, o * d * inner + j);
    at += d;
    c.out(size_t(p), std::move(y));
  }
  return {};
}

Status slice(const Ctx& c) {
  const Value& x = c.in(0);
  const size_t r = x.shape.size();
  std::vector<int64_t> starts = c.in(1).i, ends = c.in(2).i, axes, steps;
  if (c.has(3))
    axes = c.in(3).i;
  else
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (c.has(4))
    steps = c.in(4).i;
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return c.err("inputs", "starts, ends, axes and steps differ in length");
  std::vector<int64_t> b(r, 0), st(r, 1), os = x.shape;
  std::set<int64_t> seen;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = norm_axis(axes[k], r);
    if (a < 0 || a >= int64_t(r) || !seen.insert(a).second)
      return c.err("axes", "axis " + std::to_string(axes[k]) + " is out of range or repeated");
    const int64_t d = x.shape[size_t(a)], s = steps[k];
    if (s == 0) return c.err("steps", "a step of 0");
    // ONNX clamps starts to [0, d] and ends to [0, d] for positive steps,
    // starts to [0, d - 1] and ends to [-1, d - 1] for negative ones.
    auto fix = [&](int64_t v, bool is_end) {
      if (v < 0) v = v < -d ? -1 : v + d;
      return s > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, is_end ? -1 : 0, d - 1);
    };
    const int64_t s0 = fix(starts[k], false), e0 = fix(ends[k], true);
    const int64_t n =
        s > 0 ? std::max<int64_t>(0, (e0 - s0 + s - 1) / s) : std::max<int64_t>(0, (s0 - e0 - s - 1) / -s);
    if (n < 1)
      return c.err("inputs",
                   "the slice of axis " + std::to_string(a) + " is empty (zero-sized tensors are not supported)");
    b[size_t(a)] = s0, st[size_t(a)] = s, os[size_t(a)] = n;
  }
  Value y = Value::make(x.type, os);
  const auto ist = strides_of(x.shape), ost = strides_of(os);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t src = 0;
    for (size_t k = 0; k < r; ++k) src += (b[k] + ((o / ost[k]) % os[k]) * st[k]) * ist[k];
    copy_elem(x, src, y, o);
  }
  c.out(0, std::move(y));
  return {};
}

Status shape(const Ctx& c) {
  const Value& x = c.in(0);
  const int64_t r = int64_t(x.shape.size());
  auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  const int64_t b = clampi(c.n.get_i("start", 0)), e = clampi(c.n.get_i("end", r));
  if (e <= b) return c.err("attributes 'start'/'end'", "select no dimension (zero-sized tensors are not supported)");
  Value y = Value::make(kInt64, {e - b});
  for (int64_t k = b; k < e; ++k) y.i[size_t(k - b)] = x.shape[size_t(k)];
  c.out(0, std::move(y));
  return {};
}

Status cast(const Ctx& c) {
  const Value& x = c.in(0);
  const int32_t to = int32_t(c.n.get_i("to", 0));
  if (!elem_supported(to)) return c.err("attribute 'to'", "element type " + std::to_string(to) + " is not supported");
  Value y = Value::make(to, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const double v = x.at(k);
    if (to == kFloat) {
      y.f[size_t(k)] = float(v);
    } else if (to == kBool) {
      y.i[size_t(k)] = v != 0;
    } else {
      // Float to integer truncates toward zero; integers wrap to the type (numpy's astype).
      const int64_t t =
          x.is_float() ? (std::isfinite(v) ? int64_t(std::clamp(std::trunc(v), -9.2e18, 9.2e18)) : 0) : x.i[size_t(k)];
      y.i[size_t(k)] = to == kInt8    ? int8_t(uint8_t(uint64_t(t)))
                       : to == kUint8 ? uint8_t(uint64_t(t))
                       : to == kInt32 ? int32_t(uint32_t(uint64_t(t)))
                                      : t;
    }
  }
  c.out(0, std::move(y));
  return {};
}

Status activation(const Ctx& c) {
  const Value& x = c.in(0);
  if (!x.is_float()) return c.err("input '" + c.n.in(0) + "'", c.n.op + " needs float32, got " + elem_name(x.type));
  Value y = x;
  const std::string& op = c.n.op;
  const double alpha = c.n.get_f("alpha", 0.2f), beta = c.n.get_f("beta", 0.5f);
  for (auto& v : y.f) {
    const double t = v;
    if (op == "HardSigmoid")
      v = float(std::clamp(alpha * t + beta, 0.0, 1.0));
    else if (op == "HardSwish")
      v = float(t * std::clamp(t / 6.0 + 0.5, 0.0, 1.0));
    else if (op == "Softplus")
      v = float(t > 20 ? t : std::log1p(std::exp(t)));
  }
  c.out(0, std::move(y));
  return {};
}

Status pow_op(const Ctx& c) {
  const Value& a = c.in(0);
  const Value& b = c.in(1);
  if (!a.is_float()) return c.err("input '" + c.n.in(0) + "'", "Pow needs a float32 base, got " + elem_name(a.type));
  std::vector<int64_t> os;
  if (!broadcast_shape(a.shape, b.shape, &os))
    return c.err("inputs", shape_str(a.shape) + " and " + shape_str(b.shape) + " do not broadcast");
  auto ai = broadcast_index(a.shape, os), bi = broadcast_index(b.shape, os);
  Value y = Value::make(kFloat, os);
  for (size_t k = 0; k < ai.size(); ++k) y.f[k] = float(std::pow(double(a.f[size_t(ai[k])]), b.at(bi[k])));
  c.out(0, std::move(y));
  return {};
}

/// Inference-mode BatchNormalization: y = (x - mean) / sqrt(var + eps) * scale + bias along dim 1.
Status batch_norm(const Ctx& c) {
  const Value& x = c.in(0);
  if (!x.is_float() || x.shape.size() < 2) return c.err("input '" + c.n.in(0) + "'", "needs float32 of rank >= 2");
  if (c.n.get_i("training_mode", 0) != 0) return c.err("attribute 'training_mode'", "training mode is not supported");
  const int64_t C = x.shape[1];
  for (size_t k = 1; k <= 4; ++k)
    if (!c.in(k).is_float() || c.in(k).numel() != C)
      return c.err("input '" + c.n.in(k) + "'", "needs " + std::to_string(C) + " float32 values");
  const double eps = c.n.get_f("epsilon", 1e-5f);
  int64_t outer, inner;
  around(x.shape, 1, &outer, &inner);
  Value y = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t ch = 0; ch < C; ++ch) {
      const size_t k = size_t(ch);
      const float mul = float(double(c.in(1).f[k]) / std::sqrt(double(c.in(4).f[k]) + eps));
      const float add = float(double(c.in(2).f[k]) - double(c.in(3).f[k]) * double(mul));
      for (int64_t j = 0; j < inner; ++j) {
        float& v = y.f[size_t((o * C + ch) * inner + j)];
        v = v * mul + add;
      }
    }
  c.out(0, std::move(y));
  return {};
}

/// ReduceMean/Sum/Max/Min over `axes` (attribute up to opset 17; an input for ReduceSum).
Status reduce(const Ctx& c) {
  const Value& x = c.in(0);
  const size_t r = x.shape.size();
  std::vector<int64_t> axes = c.n.get_ints("axes");
  if (c.n.op == "ReduceSum" && c.has(1)) axes = c.in(1).i;
  const bool keep = c.n.get_i("keepdims", 1) != 0;
  std::vector<bool> red(r, axes.empty());
  for (auto a : axes) {
    const int64_t na = norm_axis(a, r);
    if (na < 0 || na >= int64_t(r)) return c.err("axes", "axis " + std::to_string(a) + " is out of range");
    red[size_t(na)] = true;
  }
  std::vector<int64_t> os, ks;  // output shape, kept shape (reduced dims as 1)
  for (size_t k = 0; k < r; ++k) {
    ks.push_back(red[k] ? 1 : x.shape[k]);
    if (!red[k] || keep) os.push_back(red[k] ? 1 : x.shape[k]);
  }
  int64_t n = 1;
  for (auto d : ks) n *= d;
  const int64_t per = n ? x.numel() / n : 0;
  const std::string& op = c.n.op;
  std::vector<double> acc(size_t(n), op == "ReduceMax" ? -INFINITY : op == "ReduceMin" ? INFINITY : 0.0);
  const auto ist = strides_of(x.shape), kst = strides_of(ks);
  for (int64_t f = 0; f < x.numel(); ++f) {
    int64_t o = 0;
    for (size_t k = 0; k < r; ++k) o += red[k] ? 0 : ((f / ist[k]) % x.shape[k]) * kst[k];
    const double v = x.at(f);
    double& a = acc[size_t(o)];
    a = op == "ReduceMax" ? std::max(a, v) : op == "ReduceMin" ? std::min(a, v) : a + v;
  }
  Value y = Value::make(x.type, os.empty() ? std::vector<int64_t>{} : os);
  for (int64_t k = 0; k < n; ++k) {
    const double v = op == "ReduceMean" ? acc[size_t(k)] / double(per) : acc[size_t(k)];
    if (y.is_float())
      y.f[size_t(k)] = float(v);
    else
      y.i[size_t(k)] = saturate(int64_t(op == "ReduceMean" ? std::floor(v) : v), y.type);
  }
  c.out(0, std::move(y));
  return {};
}

/// Resize (opset 11-17): nearest or (bi)linear, scales or sizes, over any axes.
/// What a Resize computes: its modes, each axis's scale and the output shape.
struct ResizeGeom {
  std::string mode, ct, nm;  // mode, coordinate_transformation_mode, nearest_mode
  bool has_sizes = false;
  std::vector<int64_t> in, out;
  std::vector<double> scale;   // per axis: the `scales` value, or out / in with `sizes`
  std::vector<float> scale_f;  // the same in float32, as ONNX Runtime holds it

  /// The input coordinate of output coordinate o along axis k, in T's
  /// precision (coordinate_transformation_mode; align_corners with `scales`
  /// takes the resized length in * scale, a fraction, as the ONNX spec does).
  template <typename T>
  T src(size_t k, int64_t o) const {
    const T sc = std::is_same_v<T, float> ? T(scale_f[k]) : T(scale[k]);
    const T i = T(in[k]), n = T(out[k]), x = T(o);
    if (ct == "asymmetric") return x / sc;
    if (ct == "align_corners") {
      const T len = has_sizes ? n : i * sc;
      return len > 1 ? x * (i - 1) / (len - 1) : T(0);
    }
    if (ct == "pytorch_half_pixel") return n > 1 ? (x + T(0.5)) / sc - T(0.5) : T(0);
    return (x + T(0.5)) / sc - T(0.5);  // half_pixel
  }
};

/// The modes, scales and output shape of a Resize node, checked.
Expected<ResizeGeom> resize_geom(const Ctx& c) {
  const Value& x = c.in(0);
  const size_t r = x.shape.size();
  ResizeGeom g;
  g.mode = c.n.get_s("mode", "nearest");
  g.ct = c.m.opset < 11 ? "asymmetric" : c.n.get_s("coordinate_transformation_mode", "half_pixel");
  g.nm = c.m.opset < 11 ? "floor" : c.n.get_s("nearest_mode", "round_prefer_floor");
  if (g.mode != "nearest" && g.mode != "linear")
    return c.err("attribute 'mode'", "'" + g.mode + "' is not supported (nearest, linear are)");
  if (g.ct == "tf_crop_and_resize")
    return c.err("attribute 'coordinate_transformation_mode'", "'tf_crop_and_resize' is not supported");
  if (r < 1 || r > 8)
    return c.err("input '" + c.n.in(0) + "'", "Resize of rank " + std::to_string(r) + " is not supported (1 to 8 are)");
  g.in = g.out = x.shape;
  g.scale.assign(r, 1.0);
  g.scale_f.assign(r, 1.0f);
  const size_t scales_at = c.m.opset < 11 ? 1 : 2;  // opset 10: (X, scales), asymmetric coordinates
  g.has_sizes = c.m.opset >= 11 && c.has(3) && c.in(3).numel() > 0;
  const bool has_scales = c.has(scales_at) && c.in(scales_at).numel() > 0;
  if (g.has_sizes) {
    if (size_t(c.in(3).numel()) != r) return c.err("input 'sizes'", "needs one value per dimension");
    for (size_t k = 0; k < r; ++k) {
      g.out[k] = c.in(3).i[k];
      if (g.out[k] < 1 || g.out[k] > limits::kMaxTensorElems)
        return c.err("input 'sizes'", "a size must be in 1..2^28");
      g.scale[k] = double(g.out[k]) / double(x.shape[k]);
      g.scale_f[k] = float(g.out[k]) / float(x.shape[k]);
    }
  } else if (has_scales) {
    const Value& sc = c.in(scales_at);
    if (size_t(sc.numel()) != r) return c.err("input 'scales'", "needs one value per dimension");
    for (size_t k = 0; k < r; ++k) {
      g.scale[k] = sc.at(int64_t(k));
      g.scale_f[k] = float(g.scale[k]);
      const double o = std::floor(double(x.shape[k]) * g.scale[k]);
      if (!(g.scale[k] > 0) || !(o >= 1) || o > double(limits::kMaxTensorElems))
        return c.err("input 'scales'", "a scale must give a size in 1..2^28");
      g.out[k] = int64_t(o);
    }
  } else {
    return c.err("inputs", "needs scales or sizes");
  }
  int64_t total = 1;
  for (auto d : g.out) total = std::min<int64_t>(total * d, limits::kMaxTensorElems + 1);
  if (total > limits::kMaxTensorElems) return c.err("output", "more than 2^28 elements");
  return g;
}

/// The axes a float linear Resize interpolates in float32 as ONNX Runtime's
/// kernels do, outermost first: a rank-2 or rank-3 tensor's every axis, a
/// rank-4 tensor's H and W with the other two scales 1 (NCHW, else NHWC), a
/// rank-5 tensor's D, H and W with N's and C's scales 1. Empty otherwise.
std::vector<size_t> linear_axes(const ResizeGeom& g) {
  const auto& s = g.scale_f;
  if (s.size() == 2) return {0, 1};
  if (s.size() == 3) return {0, 1, 2};
  if (s.size() == 4 && s[0] == 1.0f && s[1] == 1.0f) return {2, 3};
  if (s.size() == 4 && s[0] == 1.0f && s[3] == 1.0f) return {1, 2};
  if (s.size() == 5 && s[0] == 1.0f && s[1] == 1.0f) return {2, 3, 4};
  return {};
}

/// One output coordinate's two input corners and their weights along an axis.
struct Corners {
  int64_t i1 = 0, i2 = 0;
  float d1 = 0, d2 = 0;  // |c - i1| and |c - i2|, both 0.5 where i1 == i2
};

/// Each output coordinate's corners along axis k, in float32.
std::vector<Corners> corners_f32(const ResizeGeom& g, size_t k) {
  std::vector<Corners> v(size_t(g.out[k]));
  const float top = float(g.in[k] - 1);
  for (int64_t o = 0; o < g.out[k]; ++o) {
    const float c = std::max(0.0f, std::min(g.src<float>(k, o), top));
    Corners& e = v[size_t(o)];
    e.i1 = std::min<int64_t>(int64_t(c), g.in[k] - 1);
    e.i2 = std::min<int64_t>(e.i1 + 1, g.in[k] - 1);
    e.d1 = std::abs(c - float(e.i1)), e.d2 = std::abs(c - float(e.i2));
    if (e.i1 == e.i2) e.d1 = e.d2 = 0.5f;
  }
  return v;
}

/// Linear Resize along `axes` (outermost first; the others kept) in float32,
/// in ONNX Runtime's order (its UpsampleBilinear and UpsampleTrilinear): per
/// axis the coordinate clamped to [0, d - 1], corners i1 and i2 = i1 + 1
/// (clamped), then the sum over the corners, the innermost axis's bit
/// fastest, of the product of the weights from the innermost axis out (d2
/// for the near corner, d1 for the far one) times the corner's value, left
/// to right. Its results and ONNX Runtime's are the same bits.
Value resize_linear_f32(const Value& x, const ResizeGeom& g, const std::vector<size_t>& axes) {
  const size_t n = axes.size();
  std::vector<std::vector<Corners>> cs;
  for (size_t k : axes) cs.push_back(corners_f32(g, k));
  Value y = Value::make(x.type, g.out);
  const auto ist = strides_of(g.in), ost = strides_of(g.out);
  std::vector<const Corners*> at(n);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t base = 0;  // the kept axes' offset in the input
    for (size_t k = 0; k < g.out.size(); ++k)
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) base += (o / ost[k]) % g.out[k] * ist[k];
    for (size_t j = 0; j < n; ++j) at[j] = &cs[j][size_t((o / ost[axes[j]]) % g.out[axes[j]])];
    float acc = 0;
    for (uint32_t m = 0; m < (1u << n); ++m) {
      float wt = 0;
      int64_t off = base;
      for (size_t j = n; j-- > 0;) {  // the innermost axis first, on bit 0
        const bool far = (m >> (n - 1 - j)) & 1;
        const float d = far ? at[j]->d1 : at[j]->d2;
        wt = j + 1 == n ? d : wt * d;
        off += (far ? at[j]->i2 : at[j]->i1) * ist[axes[j]];
      }
      acc = m == 0 ? wt * x.f[size_t(off)] : acc + wt * x.f[size_t(off)];
    }
    y.f[size_t(o)] = acc;
  }
  return y;
}

/// Nearest, or linear over any axes, in double precision: the 2^r corners of
/// each output element weighted by the product of the axes' weights.
Value resize_any(const Value& x, const ResizeGeom& g) {
  const size_t r = g.in.size();
  Value y = Value::make(x.type, g.out);
  const auto ist = strides_of(g.in), ost = strides_of(g.out);
  std::vector<int64_t> lo(r), hi(r);
  std::vector<double> w(r);
  for (int64_t o = 0; o < y.numel(); ++o) {
    for (size_t k = 0; k < r; ++k) {
      double s = g.src<double>(k, (o / ost[k]) % g.out[k]);
      const int64_t d = g.in[k];
      if (g.mode == "nearest") {
        int64_t i;
        if (g.nm == "floor")
          i = to_int64(std::floor(s));
        else if (g.nm == "ceil")
          i = to_int64(std::ceil(s));
        else if (g.nm == "round_prefer_ceil")
          i = to_int64(std::floor(s + 0.5));
        else
          i = s == std::floor(s) + 0.5 ? to_int64(std::floor(s)) : to_int64(std::round(s));  // round_prefer_floor
        lo[k] = hi[k] = std::clamp<int64_t>(i, 0, d - 1);
        w[k] = 0;
      } else {
        s = std::isnan(s) ? 0.0 : std::clamp(s, 0.0, double(d - 1));
        lo[k] = int64_t(std::floor(s));
        hi[k] = std::min(lo[k] + 1, d - 1);
        w[k] = s - double(lo[k]);
      }
    }
    // Sum over the 2^r corners (axes with lo == hi contribute one).
    double acc = 0;
    for (uint32_t m = 0; m < (1u << r); ++m) {
      double wt = 1;
      int64_t off = 0;
      for (size_t k = 0; k < r; ++k) {
        const bool up = (m >> k) & 1;
        if (up && hi[k] == lo[k]) {
          wt = 0;
          break;
        }
        wt *= up ? w[k] : (hi[k] == lo[k] ? 1.0 : 1.0 - w[k]);
        off += (up ? hi[k] : lo[k]) * ist[k];
      }
      if (wt != 0) acc += wt * x.at(off);
    }
    if (y.is_float())
      y.f[size_t(o)] = float(acc);
    else
      y.i[size_t(o)] = saturate(to_int64(std::nearbyint(acc)), y.type);
  }
  return y;
}

/// Resize (opset 10-19 forms): a float linear Resize of the axes ONNX
/// Runtime's kernels interpolate as they compute it (resize_linear_f32),
/// every other in double precision.
Status resize(const Ctx& c) {
  auto g = resize_geom(c);
  if (!g) return g.error();
  const Value& x = c.in(0);
  const auto axes = g->mode == "linear" && x.is_float() ? linear_axes(*g) : std::vector<size_t>{};
  c.out(0, axes.empty() ? resize_any(x, *g) : resize_linear_f32(x, *g, axes));
  return {};
}

/// loom.QLinearResize (X, X_scale, X_zp, Y_scale, Y_zp, roi, scales,
/// sizes): the integer taps of resize_taps.h rounded once, as the fabric
/// computes them (map_resize.cc), for a group that stayed on the host.
Status qlinear_resize(const Ctx& c) {
  const Value& x = c.in(0);
  const Value &xs = c.in(1), &xz = c.in(2), &ys = c.in(3), &yz = c.in(4);
  if (x.is_float() || xs.numel() != 1 || xz.numel() != 1 || ys.numel() != 1 || yz.numel() != 1 || x.type != yz.type)
    return c.err("inputs", "needs an integer input and per-tensor quantization of its type");
  Node r = c.n;
  r.inputs = {c.n.in(0), c.n.in(5), c.n.in(6), c.n.in(7)};
  const Known known = [&](const std::string& t) -> const Value* {
    for (size_t k : {5, 6, 7})
      if (c.has(k) && c.n.in(k) == t) return &c.in(k);
    return nullptr;
  };
  ResizeTaps t;
  if (std::string why = resize_taps(r, 11, known, x.shape, &t); !why.empty()) return c.err("", why);
  int64_t lo = 0, hi = 0;
  elem_range(x.type, &lo, &hi);
  Value y = Value::make(x.type, {x.shape[0], x.shape[1], x.shape[2] * t.h.factor, x.shape[3] * t.w.factor});
  y.i = resize_integer(x.i, x.shape, t, xs.f[0], xz.i[0], ys.f[0], yz.i[0], lo, hi);
  c.out(0, std::move(y));
  return {};
}

/// com.microsoft.QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per
/// input): each input requantized to the output's scale as ONNX Runtime does,
/// y = saturate(round(x_scale (x - x_zp) / y_scale) + y_zp) in float, then
/// concatenated.
Status qlinear_concat(const Ctx& c) {
  const size_t n = c.n.inputs.size();
  if (n < 5 || (n - 2) % 3) return c.err("inputs", "expects Y_scale, Y_zero_point and (X, scale, zero point) triples");
  const Value& ys = c.in(0);
  const Value& yz = c.in(1);
  if (!ys.is_float() || ys.numel() != 1 || yz.is_float() || yz.numel() != 1)
    return c.err("inputs", "the output scale and zero point must be one float and one integer");
  Env env;
  Node cat;
  cat.name = c.n.name;
  cat.op = "Concat";
  cat.attrs = c.n.attrs;
  for (size_t k = 2; k < n; k += 3) {
    const Value& x = c.in(k);
    const Value& xs = c.in(k + 1);
    const Value& xz = c.in(k + 2);
    if (x.is_float() || !xs.is_float() || xs.numel() != 1 || xz.numel() != 1 || x.type != yz.type)
      return c.err("input '" + c.n.in(k) + "'", "needs per-tensor quantization of the output's integer type");
    Value r = Value::make(yz.type, x.shape);
    for (int64_t e = 0; e < x.numel(); ++e) {
      const float v = xs.f[0] * float(x.i[size_t(e)] - xz.i[0]) / ys.f[0];
      r.i[size_t(e)] = saturate(to_int64(std::nearbyint(v)) + yz.i[0], yz.type);
    }
    const std::string name = "x" + std::to_string(k);
    env[name] = std::move(r);
    cat.inputs.push_back(name);
  }
  cat.outputs = {"y"};
  LOOM_TRY(concat(Ctx{c.m, cat, env}));
  c.out(0, std::move(env.at("y")));
  return {};
}

/// ConstantOfShape: a tensor of the given (constant, small) shape filled
/// with `value` (float 0 by default).
Status constant_of_shape(const Ctx& c) {
  const Value& s = c.in(0);
  std::vector<int64_t> shape = s.i;
  int64_t n = 1;
  for (auto d : shape) {
    if (d < 1 || n > limits::kMaxTensorElems / d)
      return c.err("input '" + c.n.in(0) + "'", "shape " + shape_str(shape) + " is empty or above 2^28 elements");
    n *= d;
  }
  auto it = c.n.attrs.find("value");
  const int32_t type = it != c.n.attrs.end() && it->second.tensor_type ? it->second.tensor_type : kFloat;
  if (!elem_supported(type)) return c.err("attribute 'value'", "element type " + elem_name(type) + " is not supported");
  Value y = Value::make(type, shape);
  if (it != c.n.attrs.end() && it->second.tensor_type) {
    if (y.is_float())
      std::fill(y.f.begin(), y.f.end(), it->second.floats.at(0));
    else
      std::fill(y.i.begin(), y.i.end(), it->second.ints.at(0));
  }
  c.out(0, std::move(y));
  return {};
}

/// Expand: x broadcast (numpy) to the given shape.
Status expand(const Ctx& c) {
  const Value& x = c.in(0);
  std::vector<int64_t> os;
  if (!broadcast_shape(x.shape, c.in(1).i, &os))
    return c.err("inputs", shape_str(x.shape) + " does not broadcast to " + shape_str(c.in(1).i));
  int64_t n = 1;
  for (auto d : os) {
    if (d < 1 || n > limits::kMaxTensorElems / d)
      return c.err("input '" + c.n.in(1) + "'", "an empty or too large shape");
    n *= d;
  }
  const auto xi = broadcast_index(x.shape, os);
  Value y = Value::make(x.type, os);
  for (size_t k = 0; k < xi.size(); ++k) copy_elem(x, xi[k], y, int64_t(k));
  c.out(0, std::move(y));
  return {};
}

/// Equal (bool result), Mod (integers: fmod 0 takes the divisor's sign as
/// Python's %; floats need fmod 1), Where (condition, x, y), numpy-broadcast.
Status compare_select(const Ctx& c) {
  const std::string& op = c.n.op;
  const size_t first = op == "Where" ? 1 : 0;
  const Value& a = c.in(first);
  const Value& b = c.in(first + 1);
  if (a.type != b.type) return c.err("inputs", "types differ: " + elem_name(a.type) + " and " + elem_name(b.type));
  std::vector<int64_t> os;
  if (!broadcast_shape(a.shape, b.shape, &os)) return c.err("inputs", "shapes do not broadcast");
  std::vector<int64_t> cs;
  if (op == "Where" && !broadcast_shape(c.in(0).shape, os, &cs)) return c.err("inputs", "shapes do not broadcast");
  if (op == "Where") os = cs;
  const auto ai = broadcast_index(a.shape, os), bi = broadcast_index(b.shape, os);
  const auto ci = op == "Where" ? broadcast_index(c.in(0).shape, os) : std::vector<int64_t>{};
  const bool fmod = c.n.get_i("fmod", 0) != 0;
  if (op == "Mod" && a.is_float() && !fmod) return c.err("attribute 'fmod'", "must be 1 for float inputs");
  Value y = Value::make(op == "Equal" ? kBool : a.type, os);
  for (size_t k = 0; k < ai.size(); ++k) {
    if (op == "Equal") {
      y.i[k] = a.at(ai[k]) == b.at(bi[k]);
    } else if (op == "Where") {
      copy_elem(c.in(0).at(ci[k]) != 0 ? a : b, c.in(0).at(ci[k]) != 0 ? ai[k] : bi[k], y, int64_t(k));
    } else if (a.is_float()) {
      y.f[k] = std::fmod(a.f[size_t(ai[k])], b.f[size_t(bi[k])]);
    } else {
      const int64_t x = a.i[size_t(ai[k])], d = b.i[size_t(bi[k])];
      if (d == 0) return c.err("input '" + c.n.in(1) + "'", "integer modulo by zero");
      int64_t r = x % d;
      if (!fmod && r != 0 && ((r < 0) != (d < 0))) r += d;
      y.i[k] = r;
    }
  }
  c.out(0, std::move(y));
  return {};
}

}  // namespace

const std::map<std::string, Fn>& layout_ops() {
  static const std::map<std::string, Fn> t = {
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Shape", shape},
      {"Cast", cast},
      {"HardSigmoid", activation},
      {"HardSwish", activation},
      {"Softplus", activation},
      {"Pow", pow_op},
      {"BatchNormalization", batch_norm},
      {"ReduceMean", reduce},
      {"ReduceSum", reduce},
      {"ReduceMax", reduce},
      {"ReduceMin", reduce},
      {"Resize", resize},
      {"loom.QLinearResize", qlinear_resize},
      {"com.microsoft.QLinearConcat", qlinear_concat},
      {"ConstantOfShape", constant_of_shape},
      {"Expand", expand},
      {"Equal", compare_select},
      {"Mod", compare_select},
      {"Where", compare_select},
  };
  return t;
}

}  // namespace loom::onnxfe::hostk
