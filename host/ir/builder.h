// Builds quantized graphs in C++ with seeded weights: tests, benchmarks and
// synthetic workloads use it instead of JSON files.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/rownorm.h"
#include "ir/graph.h"

namespace loom::ir {

/// splitmix64: a tiny portable PRNG so test weights are the same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }

 private:
  uint64_t s_;
};

struct ConvSpec {
  int64_t cout = 8, kh = 3, kw = 3, stride = 1, pad = 1, groups = 1;
  bool bias = true;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name, uint64_t seed = 1) : rng_(seed) { g_.name = std::move(name); }

  std::string input(const std::string& name, std::vector<int64_t> shape, double scale = 0.05, int32_t zp = -3) {
    add_tensor(name, DType::I8, std::move(shape), scale, zp);
    g_.inputs.push_back(name);
    return name;
  }

  std::string conv(const std::string& name, const std::string& x, const ConvSpec& c) {
    const auto xs = g_.tensor(x).shape;
    const int64_t cg = xs[3] / c.groups;
    const std::string w = name + ".w";
    auto& wt = add_tensor(w, DType::I8, {c.kh, c.kw, cg, c.cout}, 0.02, 0);
    wt.q.scale.assign(size_t(c.cout), 0.0);
    for (int64_t j = 0; j < c.cout; ++j) wt.q.scale[size_t(j)] = 0.01 + 0.002 * double(j % 5);
    wt.q.zero_point = int32_t(rng_.range(-4, 4));
    fill_i8(wt);
    Node n;
    n.name = name;
    n.op = OpKind::Conv2d;
    n.inputs = {x, w};
    if (c.bias) n.inputs.push_back(bias(name + ".b", c.cout));
    n.attrs.kernel_h = c.kh, n.attrs.kernel_w = c.kw;
    n.attrs.stride_h = n.attrs.stride_w = c.stride;
    n.attrs.pad_top = n.attrs.pad_left = n.attrs.pad_bottom = n.attrs.pad_right = c.pad;
    n.attrs.groups = c.groups;
    const int64_t oh = (xs[1] + 2 * c.pad - c.kh) / c.stride + 1, ow = (xs[2] + 2 * c.pad - c.kw) / c.stride + 1;
    const double k = double(c.kh * c.kw * cg);
    return finish(n, {xs[0], oh, ow, c.cout}, out_scale(x, 0.014, k));
  }

  std::string gemm(const std::string& name, const std::string& a, int64_t n_out, bool with_bias = true) {
    const auto as = g_.tensor(a).shape;
    const std::string w = name + ".w";
    auto& wt = add_tensor(w, DType::I8, {as[1], n_out}, 0.015, 2);
    fill_i8(wt);
    Node n;
    n.name = name;
    n.op = OpKind::Gemm;
    n.inputs = {a, w};
    if (with_bias) n.inputs.push_back(bias(name + ".b", n_out));
    return finish(n, {as[0], n_out}, out_scale(a, 0.015, double(as[1])));
  }

  /// A grouped gemm with constant b [groups, K, n_out]: a [M, groups*K] -> [M, groups*n_out].
  std::string grouped_gemm(const std::string& name, const std::string& a, int64_t groups, int64_t n_out) {
    const auto as = g_.tensor(a).shape;
    const std::string w = name + ".w";
    auto& wt = add_tensor(w, DType::I8, {groups, as[1] / groups, n_out}, 0.015, -1);
    fill_i8(wt);
    Node n;
    n.name = name;
    n.op = OpKind::Gemm;
    n.inputs = {a, w};
    n.attrs.groups = groups;
    return finish(n, {as[0], groups * n_out}, out_scale(a, 0.015, double(as[1] / groups)));
  }

  /// A product of two activations, a [M, groups*K] and b [groups, K, N] (b [K, N] when groups is 1;
  /// with trans_b b is given as its transpose, [groups, N, K] or [N, K]).
  std::string matmul(const std::string& name, const std::string& a, const std::string& b, int64_t groups = 1,
                     bool trans_b = false) {
    const auto as = g_.tensor(a).shape;
    const auto bs = g_.tensor(b).shape;
    Node n;
    n.name = name;
    n.op = OpKind::Gemm;
    n.inputs = {a, b};
    n.attrs.groups = groups;
    n.attrs.trans_b = trans_b;
    const double k = double(as[1] / groups);
    return finish(n, {as[0], groups * (trans_b ? bs[bs.size() - 2] : bs.back())},
                  g_.tensor(a).q.scale[0] * g_.tensor(b).q.scale[0] * std::sqrt(k) * 40.0, 3);
  }

  /// A lookup through a random constant table (any function of one int8 value).
  std::string lut(const std::string& name, const std::string& x, double scale = 0.03, int32_t zp = 4) {
    const std::string t = name + ".table";
    auto& tt = add_tensor(t, DType::I8, {256}, scale, zp);
    fill_i8(tt);
    Node n;
    n.name = name;
    n.op = OpKind::Lut;
    n.inputs = {x, t};
    return finish(n, g_.tensor(x).shape, scale, zp);
  }

  /// Softmax over the last axis into the usual probability quantization.
  std::string softmax(const std::string& name, const std::string& x, double scale = 1.0 / 256, int32_t zp = -128) {
    Node n;
    n.name = name;
    n.op = OpKind::Softmax;
    n.inputs = {x};
    return finish(n, g_.tensor(x).shape, scale, zp);
  }

  /// Layer normalization over the last axis with gamma and beta varying
  /// over the channels (their triples from layernorm_channels).
  std::string layernorm(const std::string& name, const std::string& x, double scale = 0.03, int32_t zp = -2,
                        double epsilon = 1e-5) {
    const int64_t c = g_.tensor(x).shape.back();
    std::vector<float> gamma, beta;
    for (int64_t j = 0; j < c; ++j) {
      gamma.push_back(0.6f + 0.02f * float(j % 9));
      beta.push_back(-0.2f + 0.03f * float(j % 7));
    }
    std::vector<LayerNormChannel> ch;
    std::string why;
    uint32_t eps = 0;
    layernorm_channels(gamma, beta, scale, &ch, &why);
    layernorm_eps(epsilon, g_.tensor(x).q.scale[0], uint64_t(c), &eps, &why);
    const std::string p = name + ".params";
    auto& pt = add_tensor(p, DType::I32, {c, 3}, 1.0, 0);
    pt.is_const = true;
    pt.data = Tensor(DType::I32, pt.shape);
    for (int64_t j = 0; j < c; ++j) {
      pt.data.i32()[3 * j] = ch[size_t(j)].b;
      pt.data.i32()[3 * j + 1] = ch[size_t(j)].g;
      pt.data.i32()[3 * j + 2] = ch[size_t(j)].sh;
    }
    Node n;
    n.name = name;
    n.op = OpKind::LayerNorm;
    n.inputs = {x, p};
    n.attrs.eps = int64_t(eps);
    return finish(n, g_.tensor(x).shape, scale, zp);
  }

  std::string transpose(const std::string& name, const std::string& x, std::vector<int64_t> perm) {
    const auto& t = g_.tensor(x);
    std::vector<int64_t> ys;
    for (auto p : perm) ys.push_back(t.shape[size_t(p)]);
    Node n;
    n.name = name;
    n.op = OpKind::Transpose;
    n.inputs = {x};
    n.attrs.perm = std::move(perm);
    return finish(n, ys, t.q.scale[0], t.q.zero_point);
  }

  /// Inputs joined along `axis`, each requantized to (scale, zp).
  std::string concat(const std::string& name, const std::vector<std::string>& xs, int64_t axis, double scale = 0.06,
                     int32_t zp = 2) {
    std::vector<int64_t> ys = g_.tensor(xs[0]).shape;
    ys[size_t(axis)] = 0;
    for (const auto& x : xs) ys[size_t(axis)] += g_.tensor(x).shape[size_t(axis)];
    Node n;
    n.name = name;
    n.op = OpKind::Concat;
    n.inputs = xs;
    n.attrs.axis = axis;
    return finish(n, ys, scale, zp);
  }

  std::string slice(const std::string& name, const std::string& x, std::vector<int64_t> starts,
                    std::vector<int64_t> ends) {
    const auto& t = g_.tensor(x);
    std::vector<int64_t> ys;
    for (size_t d = 0; d < starts.size(); ++d) ys.push_back(ends[d] - starts[d]);
    Node n;
    n.name = name;
    n.op = OpKind::Slice;
    n.inputs = {x};
    n.attrs.starts = std::move(starts);
    n.attrs.ends = std::move(ends);
    return finish(n, ys, t.q.scale[0], t.q.zero_point);
  }

  std::string reshape(const std::string& name, const std::string& x, std::vector<int64_t> shape) {
    const auto& t = g_.tensor(x);
    Node n;
    n.name = name;
    n.op = OpKind::Reshape;
    n.inputs = {x};
    n.attrs.shape = shape;
    return finish(n, shape, t.q.scale[0], t.q.zero_point);
  }

  std::string unary(const std::string& name, OpKind op, const std::string& x, double clip_min = 0,
                    double clip_max = 0) {
    Node n;
    n.name = name;
    n.op = op;
    n.inputs = {x};
    n.attrs.clip_min = clip_min, n.attrs.clip_max = clip_max;
    const auto& t = g_.tensor(x);
    return finish(n, t.shape, t.q.scale[0], t.q.zero_point);
  }

  std::string add(const std::string& name, const std::string& a, const std::string& b, double scale = 0.07,
                  int32_t zp = 1) {
    Node n;
    n.name = name;
    n.op = OpKind::Add;
    n.inputs = {a, b};
    return finish(n, g_.tensor(a).shape, scale, zp);
  }

  std::string mul(const std::string& name, const std::string& a, const std::string& b, double scale = 0.05,
                  int32_t zp = -2) {
    Node n;
    n.name = name;
    n.op = OpKind::Mul;
    n.inputs = {a, b};
    return finish(n, g_.tensor(a).shape, scale, zp);
  }

  std::string pool(const std::string& name, OpKind op, const std::string& x, int64_t k, int64_t stride, int64_t pad) {
    const auto xs = g_.tensor(x).shape;
    Node n;
    n.name = name;
    n.op = op;
    n.inputs = {x};
    std::vector<int64_t> ys{xs[0], 1, 1, xs[3]};
    if (op != OpKind::GlobalAvgPool) {
      n.attrs.kernel_h = n.attrs.kernel_w = k;
      n.attrs.stride_h = n.attrs.stride_w = stride;
      n.attrs.pad_top = n.attrs.pad_left = n.attrs.pad_bottom = n.attrs.pad_right = pad;
      ys = {xs[0], (xs[1] + 2 * pad - k) / stride + 1, (xs[2] + 2 * pad - k) / stride + 1, xs[3]};
    }
    const auto& t = g_.tensor(x);
    const bool same = op == OpKind::MaxPool;
    return finish(n, ys, same ? t.q.scale[0] : t.q.scale[0] * 0.9, same ? t.q.zero_point : t.q.zero_point + 2);
  }

  std::string flatten(const std::string& name, const std::string& x) {
    const auto& t = g_.tensor(x);
    int64_t inner = 1;
    for (size_t i = 1; i < t.shape.size(); ++i) inner *= t.shape[i];
    Node n;
    n.name = name;
    n.op = OpKind::Flatten;
    n.inputs = {x};
    return finish(n, {t.shape[0], inner}, t.q.scale[0], t.q.zero_point);
  }

  /// A random int8 constant.
  std::string constant(const std::string& name, std::vector<int64_t> shape, double scale = 0.02, int32_t zp = 1) {
    fill_i8(add_tensor(name, DType::I8, std::move(shape), scale, zp));
    return name;
  }

  /// An int8 constant holding one value (a scalar spread over `shape`).
  std::string splat(const std::string& name, std::vector<int64_t> shape, int8_t v, double scale = 0.02,
                    int32_t zp = 0) {
    auto& t = add_tensor(name, DType::I8, std::move(shape), scale, zp);
    t.is_const = true;
    t.data = Tensor(DType::I8, t.shape);
    std::fill(t.data.i8(), t.data.i8() + t.data.numel(), v);
    return name;
  }

  void output(const std::string& t) { g_.outputs.push_back(t); }
  Graph& graph() { return g_; }

 private:
  TensorInfo& add_tensor(const std::string& name, DType dt, std::vector<int64_t> shape, double scale, int32_t zp) {
    TensorInfo t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.q.scale = {scale};
    t.q.zero_point = zp;
    return g_.tensors[name] = std::move(t);
  }
  void fill_i8(TensorInfo& t) {
    t.is_const = true;
    t.data = Tensor(DType::I8, t.shape);
    for (int64_t i = 0; i < t.data.numel(); ++i) t.data.i8()[i] = int8_t(rng_.range(-127, 127));
  }
  std::string bias(const std::string& name, int64_t n) {
    auto& b = add_tensor(name, DType::I32, {n}, 1.0, 0);
    b.is_const = true;
    b.data = Tensor(DType::I32, b.shape);
    for (int64_t i = 0; i < n; ++i) b.data.i32()[i] = int32_t(rng_.range(-3000, 3000));
    return name;
  }
  // Output scale that keeps accumulations of K random products mostly in range.
  double out_scale(const std::string& x, double w_scale, double k) const {
    return g_.tensor(x).q.scale[0] * w_scale * std::sqrt(k) * 90.0;
  }
  std::string finish(Node& n, std::vector<int64_t> yshape, double scale, int32_t zp = -5) {
    const std::string y = n.name + ".y";
    add_tensor(y, DType::I8, std::move(yshape), scale, zp);
    n.outputs = {y};
    g_.nodes.push_back(n);
    return y;
  }

  Graph g_;
  Rng rng_;
};

}  // namespace loom::ir
