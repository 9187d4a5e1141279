// The device mapping: one mapper per ONNX op (or op family), found by
// (domain, op) in one table, in the manner of TVM's ONNX converter map. Each
// mapper adds the node's device ops to the segment under construction or
// says why not; map_device restores the segment on a refusal.
#include "frontend/onnx/mappers.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "common/rownorm.h"
#include "ir/ir_util.h"

namespace loom::onnxfe {

namespace {

/// A mapper's answer when the node is now device ops in the segment.
constexpr std::nullopt_t kMapped = std::nullopt;

/// Whether inputs `idx` of `n` are all present and constant.
bool all_known(const SegBuilder& b, const Node& n, std::initializer_list<size_t> idx) {
  for (size_t k : idx)
    if (n.in(k).empty() || !b.known(n.in(k))) return false;
  return true;
}

/// Lists `t` among the segment's inputs when `activation` just declared it.
void new_input(SegBuilder& b, const std::string& t, bool fresh) {
  if (fresh) b.seg.graph.inputs.push_back(t);
}

// ---- layout ops: concat, slice, split, gather, squeeze/unsqueeze -----------

/// com.microsoft.QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per
/// input): each input in the output's layout, requantized by the copy.
Refusal map_concat(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  if (n.inputs.size() < 5 || (n.inputs.size() - 2) % 3)
    return "expects Y_scale, Y_zero_point and (X, scale, zero point) triples";
  const Value *ys = K(n.in(0)), *yz = K(n.in(1));
  if (!ys || !yz || !scalars({ys, yz})) return "output quantization is not per-tensor constants";
  if (yz->type != kInt8 && yz->type != kUint8) return "output is not int8/uint8";
  const std::vector<int64_t> x0 = b.shape_of(n.in(2));
  const size_t r = x0.size();
  int64_t axis = n.get_i("axis", 0);
  if (axis < 0) axis += int64_t(r);
  if (r == 0 || axis < 0 || axis >= int64_t(r)) return "axis out of range";
  const Perm ly = default_layout(r);
  const int64_t off = yz->type == kUint8 ? 128 : 0;
  std::vector<int64_t> ysh = x0;
  ysh[size_t(axis)] = 0;
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::Concat;
  for (size_t k = 2; k + 2 < n.inputs.size(); k += 3) {
    const std::string x = n.in(k);
    const Value *xs = K(n.in(k + 1)), *xz = K(n.in(k + 2));
    if (!xs || !xz || !scalars({xs, xz})) return "input '" + x + "' has no per-tensor constant quantization";
    if (b.type_of(x) != yz->type || xz->type != yz->type) return "mixed int8/uint8 operands";
    const auto xsh = b.shape_of(x);
    bool same = xsh.size() == r;
    for (size_t d = 0; same && d < r; ++d) same = int64_t(d) == axis || xsh[d] == x0[d];
    if (!same) return "input '" + x + "' does not concatenate with '" + n.in(2) + "'";
    ysh[size_t(axis)] += xsh[size_t(axis)];
    std::string v;
    if (const Value* c = K(x)) {
      // A constant part (a class token): stored in the output's layout.
      v = n.name + "/const" + std::to_string(k / 3);
      ir::TensorInfo ci;
      ci.name = v;
      ci.is_const = true;
      ci.shape = permuted(xsh, ly);
      ci.q = device_q(xs, xz);
      ci.data = Tensor(DType::I8, ci.shape);
      const auto st = [](const std::vector<int64_t>& s) {
        std::vector<int64_t> o(s.size(), 1);
        for (size_t d = s.size(); d-- > 1;) o[d - 1] = o[d] * s[d];
        return o;
      }(xsh);
      std::vector<int64_t> dev(r, 0);
      for (int64_t e = 0; e < ci.data.numel(); ++e) {
        int64_t src = 0;
        for (size_t d = 0; d < r; ++d) src += dev[d] * st[size_t(ly[d])];
        ci.data.i8()[e] = int8_t(c->i[size_t(src)] - off);
        for (size_t d = r; d-- > 0;) {
          if (++dev[d] < ci.shape[d]) break;
          dev[d] = 0;
        }
      }
      b.seg.graph.tensors[v] = ci;
    } else {
      bool fresh = false;
      if (!b.activation(x, f0(xs), i0(xz), &fresh, &ly))
        return "input '" + x + "' quantization differs from its producer's";
      if (fresh) b.seg.graph.inputs.push_back(x);
      v = b.view(x, ly, n.name + "/x" + std::to_string(k / 3));
    }
    nd.inputs.push_back(v);
  }
  const std::string y = n.outputs[0];
  if (b.in_seg(y)) return "output defined twice";
  if (std::all_of(nd.inputs.begin(), nd.inputs.end(),
                  [&](const std::string& t) { return b.seg.graph.tensors.at(t).is_const; }))
    return "every input is a constant";
  b.declare(y, ysh, yz->type, device_q(ys, yz), ly);
  nd.outputs = {y};
  nd.attrs.axis = device_axis(ly, axis);
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

/// Slice (constant starts/ends/axes, steps 1), Split, Gather of constant
/// indices that form one range, Squeeze, Unsqueeze on an int8/uint8 tensor
/// of the segment.
Refusal map_select(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  if (!b.adopt(n.in(0))) return "";  // float, or of unknown quantization: host_reason says which
  const std::string x = n.in(0);
  if (!b.in_seg(x)) return "a layout op alone is left to the host";
  const std::vector<int64_t> xsh = b.onnx_shape.at(x);
  const size_t r = xsh.size();
  for (const auto& o : n.outputs)
    if (o.empty() || b.in_seg(o)) return "an output is absent or defined twice";
  auto axis_of = [&](int64_t a) { return a < 0 ? a + int64_t(r) : a; };
  std::vector<int64_t> starts(r, 0), ends = xsh;
  if (n.op == "Slice") {
    const Value *st = K(n.in(1)), *en = K(n.in(2)), *ax = n.in(3).empty() ? nullptr : K(n.in(3)),
                *sp = n.in(4).empty() ? nullptr : K(n.in(4));
    if (!st || !en || (!n.in(3).empty() && !ax) || (!n.in(4).empty() && !sp))
      return "starts, ends, axes or steps not constant";
    if (en->numel() != st->numel() || (ax && ax->numel() != st->numel()) || (sp && sp->numel() != st->numel()) ||
        st->is_float() || en->is_float() || (ax && ax->is_float()) || (sp && sp->is_float()))
      return "starts, ends, axes and steps differ in length or are not integers";
    for (size_t k = 0; k < size_t(st->numel()); ++k) {
      const int64_t a = axis_of(ax ? ax->i.at(k) : int64_t(k));
      if (a < 0 || a >= int64_t(r) || (sp && sp->i.at(k) != 1)) return "an axis out of range or a step other than 1";
      const int64_t d = xsh[size_t(a)];
      auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + d : v, int64_t(0), d); };
      starts[size_t(a)] = clampi(st->i.at(k)), ends[size_t(a)] = clampi(en->i.at(k));
      if (ends[size_t(a)] <= starts[size_t(a)]) return "an empty slice";
    }
    slice_into(b, x, starts, ends, n.outputs[0], n.name);
  } else if (n.op == "Split") {
    const int64_t a = axis_of(n.get_i("axis", 0));
    if (a < 0 || a >= int64_t(r)) return "axis out of range";
    std::vector<int64_t> sizes = n.get_ints("split");
    if (!n.in(1).empty()) {
      const Value* s = K(n.in(1));
      if (!s) return "split sizes not constant";
      sizes = s->i;
    }
    const int64_t parts = int64_t(n.outputs.size()), d = xsh[size_t(a)];
    if (sizes.empty() && d % parts == 0) sizes.assign(size_t(parts), d / parts);
    if (int64_t(sizes.size()) != parts || std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != d)
      return "split sizes do not add up";
    int64_t at = 0;
    for (int64_t p = 0; p < parts; ++p) {
      if (sizes[size_t(p)] < 1) return "an empty part";
      starts[size_t(a)] = at, ends[size_t(a)] = at + sizes[size_t(p)];
      slice_into(b, x, starts, ends, n.outputs[size_t(p)], n.name + "#" + std::to_string(p));
      at += sizes[size_t(p)];
    }
  } else if (n.op == "Gather") {
    const Value* idx = K(n.in(1));
    const int64_t a = axis_of(n.get_i("axis", 0));
    if (!idx || a < 0 || a >= int64_t(r)) return "indices not constant or axis out of range";
    const int64_t d = xsh[size_t(a)];
    std::vector<int64_t> ids;
    for (auto i : idx->i) ids.push_back(i < 0 ? i + d : i);
    if (ids.empty() || idx->is_float()) return "indices are not integers";
    for (size_t k = 0; k < ids.size(); ++k)
      if (ids[k] < 0 || ids[k] >= d || ids[k] != ids[0] + int64_t(k)) return "indices that are not one ascending range";
    if (idx->shape.size() > 1) return "indices of rank above 1";
    starts[size_t(a)] = ids[0], ends[size_t(a)] = ids[0] + int64_t(ids.size());
    std::vector<int64_t> ysh = xsh;
    if (idx->shape.empty())
      ysh.erase(ysh.begin() + a);
    else
      ysh[size_t(a)] = int64_t(ids.size());
    if (idx->shape.empty()) {
      const std::string t = n.name + "/slice";
      slice_into(b, x, starts, ends, t, n.name);
      reshape_into(b, t, ysh, n.outputs[0], n.name + "/squeeze");
    } else {
      slice_into(b, x, starts, ends, n.outputs[0], n.name);
    }
  } else {  // Squeeze, Unsqueeze: reshapes
    std::vector<int64_t> axes = n.get_ints("axes");
    if (!n.in(1).empty()) {
      const Value* av = K(n.in(1));
      if (!av) return "axes not constant";
      axes = av->i;
    }
    std::vector<int64_t> ysh;
    if (n.op == "Squeeze") {
      std::set<int64_t> ax;
      for (auto v : axes) ax.insert(axis_of(v));
      for (size_t d = 0; d < r; ++d) {
        const bool drop = axes.empty() ? xsh[d] == 1 : ax.count(int64_t(d)) != 0;
        if (drop && xsh[d] != 1) return "squeezes a dimension that is not 1";
        if (!drop) ysh.push_back(xsh[d]);
      }
    } else {
      const size_t yr = r + axes.size();
      std::set<int64_t> ax;
      for (auto v : axes) ax.insert(v < 0 ? v + int64_t(yr) : v);
      if (ax.size() != axes.size() || (!ax.empty() && (*ax.begin() < 0 || *ax.rbegin() >= int64_t(yr))))
        return "axes out of range";
      for (size_t d = 0, j = 0; d < yr; ++d) ysh.push_back(ax.count(int64_t(d)) ? 1 : xsh[j++]);
    }
    if (ysh.empty()) return "a scalar result";
    reshape_into(b, x, ysh, n.outputs[0], n.name);
  }
  return kMapped;
}

/// com.microsoft QLinearAveragePool as an AVGPOOL layer.
Refusal map_avgpool(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  for (size_t k : {1, 2, 3, 4})
    if (n.in(k).empty() || !K(n.in(k))) return "quantization parameters are not constants";
  const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(3)), *yz = K(n.in(4));
  if (!scalars({xs, xz, ys, yz})) return "quantization must be per-tensor";
  const std::string x = n.in(0), y = n.outputs[0];
  const int32_t xt = b.type_of(x);
  if (xt != yz->type) return "input and output types differ";
  const auto xsh = b.shape_of(x);
  auto k = n.get_ints("kernel_shape");
  auto st = n.get_ints("strides", {1, 1});
  auto pads = n.get_ints("pads", {0, 0, 0, 0});
  if (xsh.size() != 4 || k.size() != 2 || st.size() != 2 || pads.size() != 4)
    return "only 2-D pooling runs on the fabric";
  if (n.get_i("ceil_mode", 0) || n.get_s("auto_pad", "NOTSET") != "NOTSET") return "ceil_mode/auto_pad";
  for (auto d : n.get_ints("dilations", {1, 1}))
    if (d != 1) return "dilations other than 1";
  const bool include = n.get_i("count_include_pad", 0) != 0;
  if (!include && (pads[0] || pads[1] || pads[2] || pads[3]))
    return "padding with count_include_pad 0 (one divisor a layer)";
  if (pads[0] >= k[0] || pads[2] >= k[0] || pads[1] >= k[1] || pads[3] >= k[1])
    return "padding not smaller than the kernel";
  bool fresh = false;
  if (!b.activation(x, f0(xs), i0(xz), &fresh)) return "input quantization differs from its producer's";
  if (fresh) b.seg.graph.inputs.push_back(x);
  const int64_t oh = (xsh[2] + pads[0] + pads[2] - k[0]) / st[0] + 1,
                ow = (xsh[3] + pads[1] + pads[3] - k[1]) / st[1] + 1;
  if (oh < 1 || ow < 1) return "empty output";
  if (b.in_seg(y)) return "output defined twice";
  b.declare(y, {xsh[0], xsh[1], oh, ow}, xt, device_q(ys, yz), default_layout(4));
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::AvgPool;
  nd.inputs = {b.view(x, default_layout(4), n.name + "/x")};
  nd.outputs = {y};
  nd.attrs.kernel_h = k[0], nd.attrs.kernel_w = k[1], nd.attrs.stride_h = st[0], nd.attrs.stride_w = st[1];
  nd.attrs.pad_top = pads[0], nd.attrs.pad_left = pads[1], nd.attrs.pad_bottom = pads[2], nd.attrs.pad_right = pads[3];
  nd.attrs.count_include_pad = include;
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

// ---- compute ops ----------------------------------------------------------

/// loom or ONNX QLinearMatMul of two activations: a [..., M, K] times
/// b [..., K, N] with equal batch dims, one GEMM group per batch element
/// (attention's heads).
Refusal map_matmul_activations(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  // Two activations: a [..., M, K] times b [..., K, N] with equal batch
  // dims, one GEMM group per batch element (attention's heads): a viewed
  // as [M, G*K] (the batch between rows and K), b as [G, K, N], and the
  // result [M, G*N] viewed back into ONNX order. A view that only
  // relabels dims costs nothing; one that moves data is a DMA transpose.
  if (!all_known(b, n, {1, 2, 4, 5, 6, 7})) return "quantization parameters are not constants";
  if (n.inputs.size() > 8 && !n.in(8).empty()) return "a bias on a product of two activations";
  const Value *as = K(n.in(1)), *az = K(n.in(2)), *bs = K(n.in(4)), *bz = K(n.in(5)), *ys = K(n.in(6)),
              *yz = K(n.in(7));
  if (!scalars({as, az, bs, bz, ys, yz})) return "quantization must be per-tensor";
  const std::string a = n.in(0), bt = n.in(3), y = n.outputs[0];
  const auto ash = b.shape_of(a), bsh = b.shape_of(bt);
  const size_t r = ash.size();
  if (r < 2 || bsh.size() != r) return "a and b need equal ranks of at least 2";
  if (!std::equal(ash.begin(), ash.end() - 2, bsh.begin())) return "batch dims differ (no broadcasting)";
  if (ash[r - 1] != bsh[r - 2]) return "inner dimensions differ";
  const int32_t yt = yz->type;
  if (yt != kInt8 && yt != kUint8) return "output must be int8 or uint8";
  if (b.in_seg(y)) return "output defined twice";
  int64_t G = 1;
  for (size_t d = 0; d + 2 < r; ++d) G *= ash[d];
  const int64_t M = ash[r - 2], Kd = ash[r - 1], N = bsh[r - 1];
  const Perm id = identity(r);
  bool f1 = false, f2 = false;
  if (!b.activation(a, f0(as), i0(az), &f1, &id)) return "input quantization differs from its producer's";
  new_input(b, a, f1);
  if (bt == a) return "a product of a tensor with itself";
  if (!b.activation(bt, f0(bs), i0(bz), &f2, &id)) return "input quantization differs from its producer's";
  new_input(b, bt, f2);
  Perm wa{int64_t(r - 2)};  // [M, batch..., K]
  for (size_t d = 0; d + 2 < r; ++d) wa.push_back(int64_t(d));
  wa.push_back(int64_t(r - 1));
  const std::string av = b.view(a, wa, n.name + "/a", {M, G * Kd});
  const std::string bv =
      b.view(bt, id, n.name + "/b", G == 1 ? std::vector<int64_t>{Kd, N} : std::vector<int64_t>{G, Kd, N});
  std::vector<int64_t> ysh(ash.begin(), ash.end() - 1);
  ysh.push_back(N);
  const ir::QParams yq = device_q(ys, yz);
  b.declare(y, ysh, yt, yq, id);
  ir::TensorInfo h = b.seg.graph.tensors[y];
  h.name = n.name + "/y";
  h.shape = {M, G * N};
  b.seg.graph.tensors[h.name] = h;
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::Gemm;
  nd.inputs = {av, bv};
  nd.outputs = {h.name};
  nd.attrs.groups = G;
  b.seg.graph.nodes.push_back(nd);
  // [M, G*N] is y in order wa: relabelled (no instructions), then put in
  // ONNX order unless a later transpose reads it as it is.
  ir::TensorInfo hv = h;
  hv.name = n.name + "/y_order";
  hv.shape = permuted(ysh, wa);
  b.seg.graph.tensors[hv.name] = hv;
  ir::Node rs;
  rs.name = hv.name;
  rs.op = ir::OpKind::Reshape;
  rs.inputs = {h.name};
  rs.outputs = {hv.name};
  rs.attrs.shape = hv.shape;
  b.seg.graph.nodes.push_back(rs);
  b.permute_into(hv.name, inverse(wa), y, n.name + "/to_onnx_order");
  return kMapped;
}

/// QLinearConv (`qconv`) or QLinearMatMul with constant weights: CONV2D on
/// NHWC images, or GEMM on rows [..., K] in ONNX order; weights converted
/// once here, a dilated kernel as the dense kernel it spans.
Refusal map_weighted(SegBuilder& b, const Node& n, bool qconv) {
  const Known& K = b.known;
  if (!all_known(b, n, {1, 2, 3, 4, 5, 6, 7})) return "weights or quantization parameters are not constants";
  const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *w = K(n.in(3)), *ws = K(n.in(4)), *wz = K(n.in(5)), *ys = K(n.in(6)),
              *yz = K(n.in(7));
  const Value* bias = n.inputs.size() > 8 && !n.in(8).empty() ? K(n.in(8)) : nullptr;
  if (n.inputs.size() > 8 && !n.in(8).empty() && !bias) return "bias is not a constant";
  if (!scalars({xs, xz, ys, yz})) return "activation quantization must be per-tensor";
  if (!scalar_int_equal(*wz)) return "per-channel weight zero points differ";
  const int32_t wt = w->type;
  if (wt != kInt8 && wt != kUint8) return "weights must be int8 or uint8";
  const int64_t woff = wt == kUint8 ? 128 : 0;
  const std::string x = n.in(0), y = n.outputs[0];
  const int32_t yt = yz->type;
  if (b.type_of(y) != yt && b.type_of(y) != 0) return "output type differs from its zero point's type";
  bool fresh = false;
  if (!b.activation(x, f0(xs), i0(xz), &fresh))
    return "input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's";
  new_input(b, x, fresh);
  const auto xsh = b.onnx_shape[x];
  // NHWC images for a conv; a matmul's rows [..., K] in ONNX order (a Linear
  // on [N, H, W, C] contracts the last ONNX axis).
  const Perm lx = qconv ? default_layout(xsh.size()) : identity(xsh.size());
  const std::string xv = b.view(x, lx, n.name + "/x");
  ir::Node nd;
  nd.name = n.name;
  nd.inputs = {xv, n.name + "/w"};
  nd.outputs = {y};
  ir::TensorInfo wi;
  wi.name = n.name + "/w";
  wi.dtype = DType::I8;
  wi.is_const = true;
  wi.q.zero_point = int32_t(i0(wz) - woff);
  wi.q.scale.assign(ws->f.begin(), ws->f.end());
  std::vector<int64_t> ysh;
  int64_t channels = 0, gemm_rows = 0;
  if (qconv) {
    if (xsh.size() != 4 || w->shape.size() != 4) return "only 2-D convolutions run on the fabric";
    const auto dil = n.get_ints("dilations", {1, 1});
    if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1) return "dilations are not 2-D";
    if (n.get_s("auto_pad", "NOTSET") != "NOTSET") return "auto_pad other than NOTSET";
    Value dilated;
    if (dil[0] > 1 || dil[1] > 1) {
      // A dilated kernel as the dense kernel it spans, the taps between its
      // own at the weight zero point (they add nothing): exact, and as
      // many more MACs as the span has zero taps (docs/onnx.md).
      const int64_t M0 = w->shape[0], C0 = w->shape[1], KH0 = w->shape[2], KW0 = w->shape[3];
      const int64_t KH1 = (KH0 - 1) * dil[0] + 1, KW1 = (KW0 - 1) * dil[1] + 1;
      dilated = Value::make(w->type, {M0, C0, KH1, KW1});
      std::fill(dilated.i.begin(), dilated.i.end(), wz->i[0]);
      for (int64_t mc = 0; mc < M0 * C0; ++mc)
        for (int64_t r = 0; r < KH0; ++r)
          for (int64_t c = 0; c < KW0; ++c)
            dilated.i[size_t((mc * KH1 + r * dil[0]) * KW1 + c * dil[1])] = w->i[size_t((mc * KH0 + r) * KW0 + c)];
      w = &dilated;
    }
    const int64_t M = w->shape[0], cpg = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    const int64_t g = n.get_i("group", 1);
    auto st = n.get_ints("strides", {1, 1});
    auto pads = n.get_ints("pads", {0, 0, 0, 0});
    if (st.size() != 2 || pads.size() != 4) return "strides/pads are not 2-D";
    if (pads[0] >= KH || pads[2] >= KH || pads[1] >= KW || pads[3] >= KW) return "padding not smaller than the kernel";
    if (g < 1 || xsh[1] % g || M % g || cpg * g != xsh[1]) return "group does not fit";
    nd.op = ir::OpKind::Conv2d;
    nd.attrs.kernel_h = KH, nd.attrs.kernel_w = KW, nd.attrs.stride_h = st[0], nd.attrs.stride_w = st[1];
    nd.attrs.pad_top = pads[0], nd.attrs.pad_left = pads[1], nd.attrs.pad_bottom = pads[2],
    nd.attrs.pad_right = pads[3];
    nd.attrs.groups = g;
    wi.shape = {KH, KW, cpg, M};
    wi.data = Tensor(DType::I8, wi.shape);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < cpg; ++c)
        for (int64_t r = 0; r < KH; ++r)
          for (int64_t s = 0; s < KW; ++s)
            wi.data.i8()[((r * KW + s) * cpg + c) * M + m] =
                int8_t(w->i[size_t(((m * cpg + c) * KH + r) * KW + s)] - woff);
    const int64_t oh = (xsh[2] + pads[0] + pads[2] - KH) / st[0] + 1,
                  ow = (xsh[3] + pads[1] + pads[3] - KW) / st[1] + 1;
    if (oh < 1 || ow < 1) return "empty output";
    ysh = {xsh[0], M, oh, ow};
    channels = M;
  } else {
    if (xsh.size() < 2 || w->shape.size() != 2) return "only [..., M, K] times a constant [K, N] runs on the fabric";
    const int64_t K2 = w->shape[0], N = w->shape[1];
    if (xsh.back() != K2) return "inner dimensions differ";
    nd.op = ir::OpKind::Gemm;
    wi.shape = {K2, N};
    wi.data = Tensor(DType::I8, wi.shape);
    for (int64_t k = 0; k < K2 * N; ++k) wi.data.i8()[k] = int8_t(w->i[size_t(k)] - woff);
    channels = N;
    if (xsh.size() > 2) {
      // [..., M, K] -> [rows, K] -> gemm -> [rows, N] -> [..., M, N] (row-major reshapes).
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < xsh.size(); ++d) rows *= xsh[d];
      ir::TensorInfo a2 = b.seg.graph.tensors[xv];
      a2.name = n.name + "/a2d";
      a2.shape = {rows, K2};
      b.seg.graph.tensors[a2.name] = a2;
      ir::Node r1;
      r1.name = n.name + "/to2d";
      r1.op = ir::OpKind::Reshape;
      r1.inputs = {xv};
      r1.outputs = {a2.name};
      r1.attrs.shape = a2.shape;
      b.seg.graph.nodes.push_back(r1);
      nd.inputs[0] = a2.name;
      gemm_rows = rows;
    }
    ysh = xsh;
    ysh.back() = N;
  }
  if (ws->numel() != 1 && ws->numel() != channels) return "weight scale count does not match the channels";
  b.seg.graph.tensors[wi.name] = wi;
  if (bias) {
    if (bias->type != kInt32 || bias->numel() != channels) return "bias is not int32 with one value per channel";
    ir::TensorInfo bi;
    bi.name = n.name + "/b";
    bi.dtype = DType::I32;
    bi.is_const = true;
    bi.shape = {channels};
    bi.data = Tensor(DType::I32, bi.shape);
    for (int64_t c = 0; c < channels; ++c) bi.data.i32()[c] = int32_t(bias->i[size_t(c)]);
    b.seg.graph.tensors[bi.name] = bi;
    nd.inputs.push_back(bi.name);
  }
  if (b.in_seg(y)) return "output defined twice";
  if (yt != kInt8 && yt != kUint8) return "output must be int8 or uint8";
  const ir::QParams yq = device_q(ys, yz);
  const ir::TensorInfo yi = b.declare(y, ysh, yt, yq, lx);
  if (gemm_rows > 0) {
    ir::TensorInfo y2 = yi;
    y2.name = n.name + "/y2d";
    y2.shape = {gemm_rows, channels};
    b.seg.graph.tensors[y2.name] = y2;
    nd.outputs = {y2.name};
    b.seg.graph.nodes.push_back(nd);
    ir::Node r2;
    r2.name = n.name + "/to3d";
    r2.op = ir::OpKind::Reshape;
    r2.inputs = {y2.name};
    r2.outputs = {y};
    r2.attrs.shape = yi.shape;
    b.seg.graph.nodes.push_back(r2);
  } else {
    b.seg.graph.nodes.push_back(nd);
  }
  return kMapped;
}

/// com.microsoft QLinearAdd/QLinearMul: ELTWISE add or mul, a constant
/// operand stored whole, an activation operand repeated over the other's
/// leading dims (squeeze-excite).
Refusal map_binary(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  const bool mul = n.op == "QLinearMul";
  if (!all_known(b, n, {1, 2, 4, 5, 6, 7})) return "quantization parameters are not constants";
  // Operand k: tensor, scale, zero point. A constant operand goes second
  // (both ops are symmetric in their operands).
  size_t ia = 0, ib = 3;
  auto count = [](const std::vector<int64_t>& s) {
    int64_t e = 1;
    for (auto d : s) e *= d;
    return e;
  };
  if (K(n.in(0)) && !K(n.in(3))) std::swap(ia, ib);
  // Of two activations the larger is a (b is broadcast over it: squeeze-excite).
  else if (!K(n.in(0)) && !K(n.in(3)) && count(b.shape_of(n.in(0))) < count(b.shape_of(n.in(3))))
    std::swap(ia, ib);
  const std::string a = n.in(ia), bt = n.in(ib);
  const Value *as = K(n.in(ia + 1)), *az = K(n.in(ia + 2)), *bs = K(n.in(ib + 1)), *bz = K(n.in(ib + 2)),
              *ys = K(n.in(6)), *yz = K(n.in(7));
  const Value* bc = K(bt);
  const auto ash = b.shape_of(a), bsh = b.shape_of(bt);
  if (!scalars({as, az, bs, bz, ys, yz})) return "quantization must be per-tensor";
  if (ash.empty() || K(a)) return "no activation operand with a static shape";
  // A constant broadcast over the activation is stored whole (same
  // integer result as an add of two equal shapes); two activations must
  // have equal shapes.
  bool bcast = bsh.size() <= ash.size() && bc;
  for (size_t d = 0; bcast && d < bsh.size(); ++d) {
    const int64_t bd = bsh[bsh.size() - 1 - d];
    bcast = bd == 1 || bd == ash[ash.size() - 1 - d];
  }
  // An activation b repeats over a's leading dims in a's device layout.
  const bool act_bcast = !bc && ash != bsh && bsh.size() == ash.size() && b.in_seg(a) &&
                         ir::repeats_over(permuted(bsh, b.layout.at(a)), permuted(ash, b.layout.at(a)));
  if (ash != bsh && !bcast && !act_bcast)
    return std::string("the fabric's ") + (mul ? "mul" : "add") +
           " broadcasts a constant, or an activation over the leading dims of the other's device layout "
           "(e.g. [1,C,1,1] over [1,C,H,W])";
  if (b.type_of(a) != yz->type || b.type_of(bt) != yz->type) return "mixed int8/uint8 operands";
  const int64_t off = yz->type == kUint8 ? 128 : 0;
  bool f1 = false, f2 = false;
  if (!b.activation(a, f0(as), i0(az), &f1)) return "input quantization differs from its producer's";
  new_input(b, a, f1);
  const Perm la = b.layout.at(a);
  std::string bv;
  if (bc) {
    if (bc->type != kInt8 && bc->type != kUint8) return "constant operand is not int8/uint8";
    bv = n.name + "/b";
    ir::TensorInfo ci;
    ci.name = bv;
    ci.dtype = DType::I8;
    ci.is_const = true;
    ci.shape = permuted(ash, la);
    ci.q.scale = {f0(bs)};
    ci.q.zero_point = int32_t(i0(bz) - off);
    ci.data = Tensor(DType::I8, ci.shape);
    // Device element e (in layout la) is ONNX element idx, which reads the
    // constant at idx with broadcast dims pinned to 0.
    const size_t r = ash.size();
    std::vector<int64_t> idx(r, 0), dev(r, 0);
    for (int64_t e = 0; e < ci.data.numel(); ++e) {
      for (size_t d = 0; d < r; ++d) idx[size_t(la[d])] = dev[d];
      int64_t src = 0;
      for (size_t d = 0; d < bsh.size(); ++d) {
        const size_t ad = r - bsh.size() + d;
        src = src * bsh[d] + (bsh[d] == 1 ? 0 : idx[ad]);
      }
      ci.data.i8()[e] = int8_t(bc->i[size_t(src)] - off);
      for (size_t d = r; d-- > 0;) {
        if (++dev[d] < ci.shape[d]) break;
        dev[d] = 0;
      }
    }
    b.seg.graph.tensors[bv] = ci;
  } else if (bt != a) {
    if (!b.activation(bt, f0(bs), i0(bz), &f2, &la)) return "input quantization differs from its producer's";
    new_input(b, bt, f2);
    bv = b.view(bt, la, n.name + "/b");
  } else if (f0(as) != f0(bs) || i0(az) != i0(bz)) {
    return "one tensor with two quantizations";
  } else {
    bv = a;
  }
  const std::string y = n.outputs[0];
  if (b.in_seg(y)) return "output defined twice";
  const ir::QParams yq = device_q(ys, yz);
  b.declare(y, ash, yz->type, yq, la);
  ir::Node nd;
  nd.name = n.name;
  nd.op = mul ? ir::OpKind::Mul : ir::OpKind::Add;
  nd.inputs = {a, bv};
  nd.outputs = {y};
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

/// loom QLinearSoftmax/QLinearLayerNorm: ROWNORM over the last axis.
Refusal map_rownorm(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  // ROWNORM over the last axis, which must be the device tensor's last
  // axis (a view otherwise). Parameters as the host op derives them.
  const bool ln = n.op == "QLinearLayerNorm";
  const size_t iy = ln ? 5 : 3;
  if (ln ? !all_known(b, n, {1, 2, 3, 4, 5, 6}) : !all_known(b, n, {1, 2, 3, 4}))
    return "the quantization parameters are not constants";
  const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(iy)), *yz = K(n.in(iy + 1));
  if (!scalars({xs, xz, ys, yz}) || (yz->type != kInt8 && yz->type != kUint8))
    return "not per-tensor 8-bit quantization";
  const std::string x = n.in(0), y = n.outputs[0];
  if (b.in_seg(y)) return "output defined twice";
  bool fresh = false;
  const Perm in_order = identity(b.shape_of(x).size());  // a new segment input: in ONNX order, rows last
  if (!b.activation(x, f0(xs), i0(xz), &fresh, &in_order))
    return "input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's";
  new_input(b, x, fresh);
  const auto& xsh = b.onnx_shape.at(x);
  const int64_t row = xsh.empty() ? 1 : xsh.back();
  if (row < 1 || row > 65535) return "a row of " + std::to_string(row) + " elements (ROWNORM takes 1..65535)";
  const int64_t param = ln ? 12 * row : 512;
  if (b.param_bytes && uint64_t(param) > b.param_bytes)
    return "a row of " + std::to_string(row) + " channels needs " + std::to_string(param) +
           " bytes of PARAM, the configuration has " + std::to_string(b.param_bytes);
  const Perm lx = b.layout.at(x);
  const Perm ly = !lx.empty() && lx.back() == int64_t(lx.size()) - 1 ? lx : identity(xsh.size());
  const std::string xv = b.view(x, ly, n.name + "/x");
  const ir::QParams yq = device_q(ys, yz);
  ir::Node nd;
  nd.name = n.name;
  nd.op = ln ? ir::OpKind::LayerNorm : ir::OpKind::Softmax;
  nd.inputs = {xv};
  if (ln) {
    const Value *g = K(n.in(3)), *be = K(n.in(4));
    if (!g->is_float() || !be->is_float() || g->numel() != row || be->numel() != row)
      return "gamma and beta are not float32 with one value per channel";
    std::vector<LayerNormChannel> ch;
    uint32_t eps = 0;
    std::string why;
    if (!layernorm_channels(std::vector<float>(g->f.begin(), g->f.end()),
                            std::vector<float>(be->f.begin(), be->f.end()), f0(ys), &ch, &why) ||
        !layernorm_eps(n.get_f("epsilon", 1e-5f), f0(xs), uint64_t(row), &eps, &why))
      return why;
    ir::TensorInfo ti;
    ti.name = n.name + "/params";
    ti.dtype = DType::I32;
    ti.is_const = true;
    ti.shape = {row, 3};
    ti.data = Tensor(DType::I32, ti.shape);
    for (int64_t j = 0; j < row; ++j) {
      ti.data.i32()[3 * j] = ch[size_t(j)].b;
      ti.data.i32()[3 * j + 1] = ch[size_t(j)].g;
      ti.data.i32()[3 * j + 2] = ch[size_t(j)].sh;
    }
    b.seg.graph.tensors[ti.name] = ti;
    nd.inputs.push_back(ti.name);
    nd.attrs.eps = int64_t(eps);
  } else {
    SoftmaxParams sp;
    std::string why;
    if (!softmax_params(f0(xs), f0(ys), &sp, &why)) return why;
  }
  b.declare(y, xsh, yz->type, yq, ly);
  nd.outputs = {y};
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

/// loom QLinearLookup: an ELTWISE lut of 256 entries.
Refusal map_lookup(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  // ELTWISE lut: the table, shifted into the device's int8 codes.
  if (!all_known(b, n, {1, 2, 3, 4, 5})) return "the table or quantization parameters are not constants";
  const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *tv = K(n.in(3)), *ys = K(n.in(4)), *yz = K(n.in(5));
  if (!scalars({xs, xz, ys, yz}) || tv->numel() != 256 || tv->type != yz->type ||
      (yz->type != kInt8 && yz->type != kUint8))
    return "not a per-tensor 8-bit lookup";
  const std::string x = n.in(0), y = n.outputs[0];
  if (b.in_seg(y)) return "output defined twice";
  bool fresh = false;
  if (!b.activation(x, f0(xs), i0(xz), &fresh))
    return "input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's";
  new_input(b, x, fresh);
  const int64_t off = yz->type == kUint8 ? 128 : 0;
  ir::TensorInfo ti;
  ti.name = n.name + "/table";
  ti.dtype = DType::I8;
  ti.is_const = true;
  ti.shape = {256};
  ti.q = device_q(ys, yz);
  ti.data = Tensor(DType::I8, ti.shape);
  for (int64_t v = 0; v < 256; ++v) ti.data.i8()[v] = int8_t(tv->i[size_t(v)] - off);
  b.seg.graph.tensors[ti.name] = ti;
  const ir::QParams yq = device_q(ys, yz);
  b.declare(y, b.onnx_shape[x], yz->type, yq, b.layout.at(x));
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::Lut;
  nd.inputs = {x, ti.name};
  nd.outputs = {y};
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

/// com.microsoft QLinearGlobalAveragePool: a GLOBALAVGPOOL layer.
Refusal map_global_avgpool(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  if (!all_known(b, n, {1, 2, 3, 4})) return "quantization parameters are not constants";
  const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(3)), *yz = K(n.in(4));
  if (n.get_i("channels_last", 0) != 0) return "channels_last";
  const std::string x = n.in(0), y = n.outputs[0];
  const int32_t xt = b.type_of(x);
  if (xt != yz->type) return "input and output types differ";
  auto xsh = b.shape_of(x);
  if (xsh.size() != 4) return "only 2-D pooling runs on the fabric";
  bool fresh = false;
  if (!b.activation(x, f0(xs), i0(xz), &fresh)) return "input quantization differs from its producer's";
  new_input(b, x, fresh);
  const std::vector<int64_t> ysh{xsh[0], xsh[1], 1, 1};
  if (b.in_seg(y)) return "output defined twice";
  const ir::QParams yq = device_q(ys, yz);
  b.declare(y, ysh, xt, yq, default_layout(4));
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::GlobalAvgPool;
  nd.inputs = {b.view(x, default_layout(4), n.name + "/x")};
  nd.outputs = {y};
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

/// Flatten and Reshape of a segment tensor: a view, free where the element
/// order stays.
Refusal map_reshape(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
  const std::string x = n.in(0), y = n.outputs[0];
  if (!b.in_seg(x)) return "a reshape alone is left to the host";
  const auto xsh = b.onnx_shape[x];
  std::vector<int64_t> ysh;
  int64_t total = 1;
  for (auto d : xsh) total *= d;
  if (n.op == "Flatten") {
    int64_t axis = n.get_i("axis", 1);
    if (axis < 0) axis += int64_t(xsh.size());
    if (axis < 0 || axis > int64_t(xsh.size())) return "axis out of range";
    int64_t a = 1;
    for (int64_t k = 0; k < axis; ++k) a *= xsh[size_t(k)];
    ysh = {a, total / a};
  } else {
    const Value* sv = K(n.in(1));
    if (!sv) return "shape is not a constant";
    int64_t known_prod = 1, neg = -1;
    for (int64_t k = 0; k < sv->numel(); ++k) {
      int64_t d = sv->i[size_t(k)];
      if (d == 0 && n.get_i("allowzero", 0) == 0 && k < int64_t(xsh.size())) d = xsh[size_t(k)];
      if (d == -1 && neg < 0) {
        neg = k;
      } else if (d < 1) {
        return "unsupported shape value";
      } else {
        known_prod *= d;
      }
      ysh.push_back(d);
    }
    if (neg >= 0) {
      if (total % known_prod) return "cannot infer -1";
      ysh[size_t(neg)] = total / known_prod;
    } else if (known_prod != total) {
      return "element count changes";
    }
  }
  // Row-major on both sides: the input in ONNX order (moved there when it
  // is NHWC and the order differs), the output in ONNX order too, or NHWC
  // where that is the same order (so images stay NHWC for what follows).
  if (b.in_seg(y)) return "output defined twice";
  reshape_into(b, x, ysh, y, n.name);
  return kMapped;
}

/// Transpose: metadata where the bytes stay as they lie, else a DMA gather
/// (or nothing where a later view reads the data in its original order).
Refusal map_transpose(SegBuilder& b, const Node& n) {
  // A layout transform: a DMA gather on the device (compiler/lower.cc), or
  // nothing where a later transpose or matmul reads the data in its
  // original order (SegBuilder::permute_into).
  const std::string x = n.in(0), y = n.outputs[0];
  if (!b.adopt(x)) return "a transpose of a tensor of unknown quantization is left to the host";
  const auto xsh = b.onnx_shape[x];
  const size_t r = xsh.size();
  Perm perm = n.get_ints("perm", {});
  if (perm.empty()) {  // ONNX default: the dims reversed
    perm = identity(r);
    std::reverse(perm.begin(), perm.end());
  }
  if (perm.size() != r) return "perm does not match the rank";
  std::vector<bool> seen(r, false);
  for (auto d : perm) {
    if (d < 0 || d >= int64_t(r) || seen[size_t(d)]) return "perm is not a permutation";
    seen[size_t(d)] = true;
  }
  if (b.in_seg(y)) return "output defined twice";
  const auto ysh = permuted(xsh, perm);
  // The layout in which y's bytes are x's as they lie: when it is one a
  // segment boundary knows (ONNX order, or NHWC at rank 4), the transpose
  // is metadata (ConvNeXt's NCHW <-> NHWC around its LayerNorm and MLP).
  const Perm lx = b.layout.at(x), inv_perm = inverse(perm);
  Perm keep;
  for (auto d : lx) keep.push_back(inv_perm[size_t(d)]);
  if (keep == identity(r) || (r == 4 && keep == default_layout(4))) {
    const ir::TensorInfo& yi = b.declare(y, ysh, b.onnx_type[x], b.seg.graph.tensors[x].q, keep);
    ir::Node nd;
    nd.name = n.name;
    nd.op = ir::OpKind::Reshape;
    nd.inputs = {x};
    nd.outputs = {y};
    nd.attrs.shape = yi.shape;
    b.seg.graph.nodes.push_back(nd);
    return kMapped;
  }
  b.declare(y, ysh, b.onnx_type[x], b.seg.graph.tensors[x].q, identity(r));
  // Device dim i of y is ONNX dim perm[i] of x, device dim inv(layout x)[perm[i]] of x.
  const Perm inv = inverse(b.layout.at(x));
  Perm p;
  for (auto d : perm) p.push_back(inv[size_t(d)]);
  b.permute_into(x, p, y, n.name);
  return kMapped;
}

/// MaxPool of int8/uint8 images: a MAXPOOL layer (ceil_mode as more
/// bottom/right padding).
Refusal map_maxpool(SegBuilder& b, const Node& n) {
  const std::string x = n.in(0);
  const int32_t xt = b.type_of(x);
  if (xt != kInt8 && xt != kUint8) return "float MaxPool runs on the host";
  if (n.outputs.size() > 1) return "Indices output";
  auto xsh = b.shape_of(x);
  if (xsh.size() != 4) return "only 2-D pooling runs on the fabric";
  auto k = n.get_ints("kernel_shape");
  auto st = n.get_ints("strides", {1, 1});
  auto pads = n.get_ints("pads", {0, 0, 0, 0});
  for (auto d : n.get_ints("dilations", {1, 1}))
    if (d != 1) return "dilations other than 1";
  if (n.get_s("auto_pad", "NOTSET") != "NOTSET" || n.get_i("storage_order", 0)) return "auto_pad/storage_order";
  if (k.size() != 2 || st.size() != 2 || pads.size() != 4) return "not 2-D";
  if (n.get_i("ceil_mode", 0)) {
    // The last window may start past the floor's last one: that many more
    // rows/columns of bottom/right padding (-128, never a window's max:
    // every window keeps a real element), to the output size shape
    // inference gave (ONNX Runtime's own).
    const auto ysh = b.shape_of(n.outputs[0]);
    if (ysh.size() != 4) return "ceil_mode without an inferred output shape";
    for (size_t a = 0; a < 2; ++a) {
      const int64_t need = (ysh[2 + a] - 1) * st[a] + k[a] - (xsh[2 + a] + pads[a] + pads[a + 2]);
      if ((ysh[2 + a] - 1) * st[a] >= xsh[2 + a] + pads[a]) return "ceil_mode with a window in the padding only";
      pads[a + 2] += std::max<int64_t>(need, 0);
    }
  }
  if (pads[0] >= k[0] || pads[2] >= k[0] || pads[1] >= k[1] || pads[3] >= k[1])
    return "padding not smaller than the kernel";
  double scale = 1.0;
  int64_t zp = 0;
  if (b.in_seg(x)) {
    scale = b.seg.graph.tensors[x].q.scale[0];
    zp = b.seg.graph.tensors[x].q.zero_point + (xt == kUint8 ? 128 : 0);
  }
  bool fresh = false;
  if (!b.activation(x, scale, zp, &fresh)) return "input has no static shape";
  new_input(b, x, fresh);
  const int64_t oh = (xsh[2] + pads[0] + pads[2] - k[0]) / st[0] + 1,
                ow = (xsh[3] + pads[1] + pads[3] - k[1]) / st[1] + 1;
  const std::vector<int64_t> ysh{xsh[0], xsh[1], oh, ow};
  const std::string y = n.outputs[0];
  if (b.in_seg(y)) return "output defined twice";
  b.declare(y, ysh, xt, b.seg.graph.tensors[x].q, default_layout(4));
  ir::Node nd;
  nd.name = n.name;
  nd.op = ir::OpKind::MaxPool;
  nd.inputs = {b.view(x, default_layout(4), n.name + "/x")};
  nd.outputs = {y};
  nd.attrs.kernel_h = k[0], nd.attrs.kernel_w = k[1], nd.attrs.stride_h = st[0], nd.attrs.stride_w = st[1];
  nd.attrs.pad_top = pads[0], nd.attrs.pad_left = pads[1], nd.attrs.pad_bottom = pads[2], nd.attrs.pad_right = pads[3];
  b.seg.graph.nodes.push_back(nd);
  return kMapped;
}

Refusal map_qlinear_conv(SegBuilder& b, const Node& n) { return map_weighted(b, n, true); }

/// A product with constant weights, or of two activations.
Refusal map_qlinear_matmul(SegBuilder& b, const Node& n) {
  if (!n.in(3).empty() && !b.known(n.in(3))) return map_matmul_activations(b, n);
  return map_weighted(b, n, false);
}

using Mapper = Refusal (*)(SegBuilder&, const Node&);

/// Every ONNX op with a device form: (domain, op) -> its mapper. The QDQ
/// folds (qdq_fold.h) produce the quantized forms from QDQ graphs.
const std::map<std::pair<std::string, std::string>, Mapper>& mappers() {
  static const std::map<std::pair<std::string, std::string>, Mapper> table = {
      {{"", "QLinearConv"}, map_qlinear_conv},
      {{"loom", "QLinearConv"}, map_qlinear_conv},
      {{"", "QLinearMatMul"}, map_qlinear_matmul},
      {{"loom", "QLinearMatMul"}, map_qlinear_matmul},
      {{"com.microsoft", "QLinearAdd"}, map_binary},
      {{"com.microsoft", "QLinearMul"}, map_binary},
      {{"com.microsoft", "QLinearAveragePool"}, map_avgpool},
      {{"com.microsoft", "QLinearGlobalAveragePool"}, map_global_avgpool},
      {{"com.microsoft", "QLinearConcat"}, map_concat},
      {{"loom", "QLinearSoftmax"}, map_rownorm},
      {{"loom", "QLinearLayerNorm"}, map_rownorm},
      {{"loom", "QLinearLookup"}, map_lookup},
      {{"", "MaxPool"}, map_maxpool},
      {{"", "Flatten"}, map_reshape},
      {{"", "Reshape"}, map_reshape},
      {{"", "Transpose"}, map_transpose},
      {{"", "Slice"}, map_select},
      {{"", "Split"}, map_select},
      {{"", "Gather"}, map_select},
      {{"", "Squeeze"}, map_select},
      {{"", "Unsqueeze"}, map_select},
      {{"", "Resize"}, map_resize},
      {{"loom", "QLinearResize"}, map_resize},
  };
  return table;
}

}  // namespace

Refusal map_device(SegBuilder& b, const Node& n) {
  const auto it = mappers().find({n.domain, n.op});
  if (it == mappers().end()) return "";
  const SegmentDraft saved_seg = b.seg;
  const auto saved_shape = b.onnx_shape;
  const auto saved_type = b.onnx_type;
  const auto saved_layout = b.layout;
  Refusal why = it->second(b, n);
  if (why) {
    b.seg = saved_seg;
    b.onnx_shape = saved_shape;
    b.onnx_type = saved_type;
    b.layout = saved_layout;
    return why;
  }
  return kMapped;
}

std::string host_reason(const Model& m, const Uses& u, const Known& known, const Node& n,
                        const std::map<std::string, std::string>& unfolded) {
  if (auto it = unfolded.find(n.name); it != unfolded.end()) return "not quantized: " + it->second;
  const std::string op = n.domain.empty() ? n.op : n.domain + "." + n.op;
  if (n.op == "QuantizeLinear" && n.domain.empty())
    return "quantizes a float tensor for the fabric (a float region ends here)";
  if (n.op == "DequantizeLinear" && n.domain.empty())
    return "dequantizes for a float consumer (a float region starts here)";
  bool integer = false, dq_in = false, q_out = false;
  for (const auto& i : n.inputs) {
    if (i.empty() || known(i)) continue;
    auto t = m.types.find(i);
    integer = integer || (t != m.types.end() && (t->second.type == kInt8 || t->second.type == kUint8));
    auto p = u.producer.find(i);
    dq_in = dq_in || (p != u.producer.end() && m.nodes[p->second].op == "DequantizeLinear");
  }
  for (const auto& o : n.outputs)
    if (auto c = u.consumers.find(o); c != u.consumers.end())
      for (size_t k : c->second) q_out = q_out || m.nodes[k].op == "QuantizeLinear";
  if (!integer && (dq_in || q_out))
    return "not quantized: loom has no quantized form of " + op +
           " with these operands and attributes "
           "(it runs in float between DequantizeLinear and QuantizeLinear)";
  if (!integer) return "not quantized: " + op + " on float tensors (no QuantizeLinear/DequantizeLinear around it)";
  return "the fabric has no form of " + op + " with these operands";
}

}  // namespace loom::onnxfe
