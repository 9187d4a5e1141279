// Resize on the fabric (docs/onnx.md "Resize on the fabric"): a Resize by
// whole factors as the phases of resize_taps.h, in device ops the compiler
// already runs. In NHWC:
//   1. the wide input: per column phase b the input's columns shifted by
//      the phase's first tap (edge columns repeated where the shift runs
//      off the image), concatenated along C: pixel u holds, for every
//      phase, the input pixel that phase's window starts at;
//   2. rows shifted the same way (the taps' rows, edges repeated);
//   3. per row phase a one depthwise convolution (linear: the 2-D weights
//      w_a * w_b of every phase b on its own channels, over the taps'
//      denominator, requantized once to the output) or, nearest, the rows
//      of its tap; each writes the output rows F * i + a, whose pixels are
//      (column phase, channel) pairs in output order;
//   4. the row phases concatenated and viewed as the output (free).
// Edge repeats and shifts are slices and concats (DMA copies), the filters
// depthwise convolutions (DWCONV), so the reference and every backend agree
// bit for bit with the host kernel of loom.QLinearResize.
#include <algorithm>
#include <map>

#include "frontend/onnx/mappers.h"
#include "frontend/onnx/resize_taps.h"

namespace loom::onnxfe {
namespace {

/// Adds a Resize's helper tensors and nodes to the segment, named after it.
struct ResizeEmitter {
  SegBuilder& b;
  std::string base;
  int made = 0;

  std::string fresh(const std::string& tag) { return base + "/" + tag + std::to_string(made++); }

  std::string tensor(const std::string& tag, const std::vector<int64_t>& shape, const ir::QParams& q) {
    ir::TensorInfo ti;
    ti.name = fresh(tag);
    ti.dtype = DType::I8;
    ti.shape = shape;
    ti.q = q;
    b.seg.graph.tensors[ti.name] = ti;
    return ti.name;
  }
  const ir::TensorInfo& info(const std::string& t) const { return b.seg.graph.tensors.at(t); }
  void node(ir::OpKind op, std::vector<std::string> in, const std::string& out, ir::Attrs a = {}) {
    ir::Node nd;
    nd.name = out;
    nd.op = op;
    nd.inputs = std::move(in);
    nd.outputs = {out};
    nd.attrs = std::move(a);
    b.seg.graph.nodes.push_back(std::move(nd));
  }

  /// src[lo : hi) along axis `ax`.
  std::string slice(const std::string& src, size_t ax, int64_t lo, int64_t hi) {
    auto shape = info(src).shape;
    ir::Attrs a;
    a.starts.assign(shape.size(), 0);
    a.ends = shape;
    a.starts[ax] = lo, a.ends[ax] = hi;
    shape[ax] = hi - lo;
    const std::string out = tensor("slice", shape, info(src).q);
    node(ir::OpKind::Slice, {src}, out, a);
    return out;
  }
  std::string concat(const std::vector<std::string>& parts, size_t ax, const ir::QParams& q) {
    if (parts.size() == 1) return parts[0];
    auto shape = info(parts[0]).shape;
    shape[ax] = 0;
    for (const auto& p : parts) shape[ax] += info(p).shape[ax];
    const std::string out = tensor("concat", shape, q);
    ir::Attrs a;
    a.axis = int64_t(ax);
    node(ir::OpKind::Concat, parts, out, a);
    return out;
  }
  void reshape_into(const std::string& src, const std::string& out) {
    ir::Attrs a;
    a.shape = info(out).shape;
    node(ir::OpKind::Reshape, {src}, out, a);
  }
  std::string reshape(const std::string& src, const std::vector<int64_t>& shape) {
    const std::string out = tensor("view", shape, info(src).q);
    reshape_into(src, out);
    return out;
  }

  /// t[u] = src[clamp(u + d)] for u < len along axis `ax`: the edge element
  /// repeated where u + d runs off either end.
  std::string shifted(const std::string& src, size_t ax, int64_t d, int64_t len) {
    const int64_t L = info(src).shape[ax];
    const int64_t left = std::clamp<int64_t>(-d, 0, len);
    const int64_t lo = std::max<int64_t>(0, d), hi = std::min<int64_t>(L, len + d);
    const int64_t mid = std::clamp<int64_t>(hi - lo, 0, len - left);
    const int64_t right = len - left - mid;
    if (left == 0 && right == 0 && lo == 0 && mid == L) return src;
    std::vector<std::string> parts;
    if (left > 0) parts.insert(parts.end(), size_t(left), slice(src, ax, 0, 1));
    if (mid > 0) parts.push_back(slice(src, ax, lo, lo + mid));
    if (right > 0) parts.insert(parts.end(), size_t(right), slice(src, ax, L - 1, L));
    return concat(parts, ax, info(src).q);
  }

  /// shifted(src, ax, d, len) for each phase's offset d, in phase order;
  /// phases that share an offset share one copy.
  std::vector<std::string> shifted_per_phase(const std::string& src, size_t ax, const ResizeAxis& axis, int64_t len) {
    std::map<int64_t, std::string> by_shift;
    std::vector<std::string> out;
    for (const auto& ph : axis.phases) {
      auto it = by_shift.find(ph.d);
      if (it == by_shift.end()) it = by_shift.emplace(ph.d, shifted(src, ax, ph.d, len)).first;
      out.push_back(it->second);
    }
    return out;
  }
};

/// Step 1: [N, H, U, F_w * C], pixel u of column phase b's channels holding
/// input column clamp(u + d_b), U = W + taps - 1.
std::string wide_columns(ResizeEmitter& e, const std::string& x, const ResizeAxis& aw) {
  const int64_t U = e.info(x).shape[2] + aw.taps() - 1;
  return e.concat(e.shifted_per_phase(x, 2, aw, U), 3, e.info(x).q);
}

/// Step 3 for a Resize that requantizes: row phase a's depthwise convolution over the
/// row-shifted wide input `rows` (its first row input row dmin), the
/// kernel's rows the union of every phase's taps (zero outside phase a's).
std::string phase_filter(ResizeEmitter& e, const std::string& rows, const ResizeTaps& t, size_t a, int64_t dmin,
                         int64_t kh, const ir::QParams& yq) {
  const auto& xs = e.info(rows).shape;
  const int64_t C = xs[3] / t.w.factor, kw = t.w.taps(), M = xs[3];
  const ResizePhase& ph = t.h.phases[a];
  ir::TensorInfo wi;
  wi.name = e.fresh("taps");
  wi.dtype = DType::I8;
  wi.is_const = true;
  wi.shape = {kh, kw, 1, M};
  wi.q.scale = {1.0 / double(t.den())};
  wi.q.zero_point = -128;  // weights 0..255 as int8 codes
  wi.data = Tensor(DType::I8, wi.shape);
  for (int64_t ky = 0; ky < kh; ++ky) {
    const int64_t k = ky - (ph.d - dmin);
    const int64_t wh = k >= 0 && k < int64_t(ph.w.size()) ? ph.w[size_t(k)] : 0;
    for (int64_t kx = 0; kx < kw; ++kx)
      for (int64_t m = 0; m < M; ++m)
        wi.data.i8()[(ky * kw + kx) * M + m] = int8_t(wh * t.w.phases[size_t(m / C)].w[size_t(kx)] - 128);
  }
  e.b.seg.graph.tensors[wi.name] = wi;
  const std::string out = e.tensor("phase", {xs[0], xs[1] - kh + 1, xs[2] - kw + 1, M}, yq);
  ir::Attrs at;
  at.kernel_h = kh, at.kernel_w = kw, at.groups = M;
  at.moves_only = true;  // an interpolation, not MACs of the model's count
  at.round_even = true;  // ties to even, as QuantizeLinear rounds the float value
  e.node(ir::OpKind::Conv2d, {rows, wi.name}, out, at);
  return out;
}

/// Steps 2-4: each row phase's output rows, then the phases interleaved
/// into `y` (declared [N, OH, OW, C]).
void row_phases(ResizeEmitter& e, const std::string& wide, const ResizeTaps& t, bool filter, const ir::QParams& yq,
                const std::string& y) {
  const auto& ws = e.info(wide).shape;
  const int64_t N = ws[0], H = ws[1];
  std::vector<std::string> phases;
  if (filter) {
    int64_t dmin = t.h.phases[0].d, dmax = dmin;
    for (const auto& ph : t.h.phases) dmin = std::min(dmin, ph.d), dmax = std::max(dmax, ph.d);
    const int64_t kh = t.h.taps() + dmax - dmin;
    const std::string rows = e.shifted(wide, 1, dmin, H + kh - 1);
    for (size_t a = 0; a < t.h.phases.size(); ++a) phases.push_back(phase_filter(e, rows, t, a, dmin, kh, yq));
  } else {
    phases = e.shifted_per_phase(wide, 1, t.h, H);
  }
  if (phases.size() == 1) return e.reshape_into(phases[0], y);
  const int64_t row = e.info(y).shape[2] * e.info(y).shape[3];  // an output row: OW pixels of C
  std::vector<std::string> rows;
  for (const auto& p : phases) rows.push_back(e.reshape(p, std::vector<int64_t>{N, H, 1, row}));
  e.reshape_into(e.concat(rows, 2, yq), y);
}

}  // namespace

/// loom.QLinearResize (X, X_scale, X_zp, Y_scale, Y_zp, roi, scales, sizes)
/// or a nearest Resize on the integers (its Q/DQ folded: one quantization).
Refusal map_resize(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  const bool quantized = n.domain == "loom";
  const std::string x = n.in(0), y = n.outputs[0];
  // A float Resize (its QDQ group did not fold): host_reason says why.
  if (!quantized && (n.get_s("mode", "nearest") != "nearest" || !b.adopt(x))) return "";
  Node r = n;
  if (quantized) r.inputs = {x, n.in(5), n.in(6), n.in(7)};
  const std::vector<int64_t> xsh = b.shape_of(x);
  ResizeTaps t;
  if (std::string why = resize_taps(r, quantized ? 11 : int(b.m.opset), K, xsh, &t); !why.empty()) return why;
  ir::QParams yq;
  int32_t yt = 0;
  bool filter = n.get_s("mode", "nearest") == "linear";  // else rows and columns copied
  if (quantized) {
    for (size_t k : {1, 2, 3, 4})
      if (n.in(k).empty() || !K(n.in(k))) return "quantization parameters are not constants";
    const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(3)), *yz = K(n.in(4));
    if (!scalars({xs, xz, ys, yz})) return "quantization must be per-tensor";
    if (b.type_of(x) != yz->type || xz->type != yz->type) return "input and output types differ";
    bool fresh = false;
    if (!b.activation(x, f0(xs), i0(xz), &fresh)) return "input quantization differs from its producer's";
    if (fresh) b.seg.graph.inputs.push_back(x);
    yq = device_q(ys, yz), yt = yz->type;
    const ir::QParams& xq = b.seg.graph.tensors.at(x).q;
    filter = filter || xq.scale != yq.scale || xq.zero_point != yq.zero_point;  // a nearest one requantizes
  } else {
    if (!b.in_seg(x)) return "a layout op alone is left to the host";
    yq = b.seg.graph.tensors.at(x).q, yt = b.onnx_type.at(x);
  }
  if (b.in_seg(y)) return "output defined twice";
  const std::string xd = b.view(x, default_layout(4), n.name + "/x");
  b.declare(y, {xsh[0], xsh[1], xsh[2] * t.h.factor, xsh[3] * t.w.factor}, yt, yq, default_layout(4));
  ResizeEmitter e{b, n.name};
  row_phases(e, wide_columns(e, xd, t.w), t, filter, yq, y);
  return std::nullopt;
}

}  // namespace loom::onnxfe
