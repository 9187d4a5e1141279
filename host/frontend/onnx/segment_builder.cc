// The segment builder's layout and view helpers.
#include "frontend/onnx/segment_builder.h"

#include <algorithm>

#include "ir/ir_util.h"

namespace loom::onnxfe {

Perm identity(size_t rank) {
  Perm p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = int64_t(i);
  return p;
}

Perm default_layout(size_t rank) { return rank == 4 ? Perm{0, 2, 3, 1} : identity(rank); }

Perm inverse(const Perm& p) {
  Perm q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[size_t(p[i])] = int64_t(i);
  return q;
}

std::vector<int64_t> permuted(const std::vector<int64_t>& s, const Perm& p) {
  std::vector<int64_t> v;
  for (auto d : p) v.push_back(s[size_t(d)]);
  return v;
}

bool keeps_order(const std::vector<int64_t>& s, const Perm& p) {
  int64_t last = -1;
  for (auto d : p) {
    if (s[size_t(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

bool SegBuilder::activation(const std::string& t, double scale, int64_t zp, bool* is_new, const Perm* want) {
  const int32_t ty = type_of(t);
  if (ty != kInt8 && ty != kUint8) return false;
  const int64_t off = ty == kUint8 ? 128 : 0;
  auto it = seg.graph.tensors.find(t);
  if (it != seg.graph.tensors.end()) {
    *is_new = false;
    return it->second.q.scale.size() == 1 && it->second.q.scale[0] == scale && it->second.q.zero_point == zp - off;
  }
  auto s = shape_of(t);
  if (s.empty()) return false;
  ir::TensorInfo ti;
  ti.name = t;
  ti.dtype = DType::I8;
  const Perm l = want ? *want : default_layout(s.size());
  ti.shape = permuted(s, l);
  ti.q.scale = {scale};
  ti.q.zero_point = int32_t(zp - off);
  seg.graph.tensors[t] = ti;
  onnx_shape[t] = s;
  onnx_type[t] = ty;
  layout[t] = l;
  *is_new = true;
  return true;
}

ir::TensorInfo& SegBuilder::declare(const std::string& y, const std::vector<int64_t>& ysh, int32_t type,
                                    const ir::QParams& q, const Perm& l) {
  ir::TensorInfo yi;
  yi.name = y;
  yi.dtype = DType::I8;
  yi.shape = permuted(ysh, l);
  yi.q = q;
  onnx_shape[y] = ysh;
  onnx_type[y] = type;
  layout[y] = l;
  return seg.graph.tensors[y] = yi;
}

bool SegBuilder::adopt(const std::string& t) {
  if (in_seg(t)) return true;
  for (const auto& n : m.nodes) {
    if (n.outputs.empty() || n.outputs[0] != t) continue;
    if (n.op != "QuantizeLinear" || !n.domain.empty() || n.in(2).empty()) return false;
    const Value *s = known(n.in(1)), *z = known(n.in(2));
    if (!s || !z || s->numel() != 1 || z->numel() != 1 || !s->is_float()) return false;
    bool fresh = false;
    if (!activation(t, s->f[0], z->i[0], &fresh)) return false;
    if (fresh) seg.graph.inputs.push_back(t);
    return true;
  }
  return false;
}

void SegBuilder::permute_into(std::string src, Perm p, const std::string& out, const std::string& name) {
  for (const ir::Node* t = producer(src); t && t->op == ir::OpKind::Transpose; t = producer(src)) {
    Perm q;
    for (auto d : p) q.push_back(t->attrs.perm[size_t(d)]);
    p = std::move(q);
    src = t->inputs[0];
  }
  const ir::TensorInfo& x = seg.graph.tensors.at(src);
  ir::Node nd;
  nd.name = name;
  nd.inputs = {src};
  nd.outputs = {out};
  if (keeps_order(x.shape, p)) {
    nd.op = ir::OpKind::Reshape;
    nd.attrs.shape = seg.graph.tensors.at(out).shape;
  } else {
    nd.op = ir::OpKind::Transpose;
    nd.attrs.perm = p;
  }
  seg.graph.nodes.push_back(nd);
}

std::string SegBuilder::view(const std::string& t, const Perm& want, const std::string& reader,
                             std::vector<int64_t> shape) {
  const ir::TensorInfo& ti = seg.graph.tensors.at(t);
  if (shape.empty()) shape = permuted(onnx_shape.at(t), want);
  if (layout.at(t) == want && ti.shape == shape) return t;
  std::string name = t + "/view";
  for (auto d : want) name += std::to_string(d);
  for (auto d : shape) name.append(1, '_').append(std::to_string(d));  // (GCC 12 -O3 warns on "_" + string)
  if (in_seg(name)) return name;
  ir::TensorInfo vi = ti;
  vi.name = name;
  // Viewed in `want` order first; a reshape to `shape` keeps that order.
  vi.shape = permuted(onnx_shape.at(t), want);
  const Perm inv = inverse(layout.at(t));
  Perm p;
  for (auto d : want) p.push_back(inv[size_t(d)]);
  if (vi.shape == shape) {
    seg.graph.tensors[name] = vi;
    permute_into(t, p, name, reader);
    return name;
  }
  const std::string mid = name + "/order";
  vi.name = mid;
  seg.graph.tensors[mid] = vi;
  permute_into(t, p, mid, reader);
  vi.name = name;
  vi.shape = shape;
  seg.graph.tensors[name] = vi;
  ir::Node r;
  r.name = reader + "/shape";
  r.op = ir::OpKind::Reshape;
  r.inputs = {mid};
  r.outputs = {name};
  r.attrs.shape = shape;
  seg.graph.nodes.push_back(r);
  return name;
}

bool scalars(std::initializer_list<const Value*> vs) {
  return std::all_of(vs.begin(), vs.end(), [](const Value* v) { return v->numel() == 1; });
}

ir::QParams device_q(const Value* s, const Value* z) {
  ir::QParams q;
  q.scale = {f0(s)};
  q.zero_point = int32_t(i0(z) - (z->type == kUint8 ? 128 : 0));
  return q;
}

int64_t device_axis(const Perm& l, int64_t a) { return int64_t(std::find(l.begin(), l.end(), a) - l.begin()); }

void reshape_into(SegBuilder& b, const std::string& x, const std::vector<int64_t>& ysh, const std::string& y,
                  const std::string& name) {
  const std::string xv = b.view(x, identity(b.onnx_shape.at(x).size()), name + "/x");
  const Perm ly = keeps_order(ysh, default_layout(ysh.size())) ? default_layout(ysh.size()) : identity(ysh.size());
  const ir::TensorInfo& yi = b.declare(y, ysh, b.onnx_type.at(x), b.seg.graph.tensors.at(x).q, ly);
  ir::Node nd;
  nd.name = name;
  nd.op = ir::OpKind::Reshape;
  nd.inputs = {xv};
  nd.outputs = {y};
  nd.attrs.shape = yi.shape;
  b.seg.graph.nodes.push_back(nd);
}

void slice_into(SegBuilder& b, const std::string& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::string& y, const std::string& name) {
  const Perm lx = b.layout.at(x);
  std::vector<int64_t> ysh;
  for (size_t d = 0; d < starts.size(); ++d) ysh.push_back(ends[d] - starts[d]);
  b.declare(y, ysh, b.onnx_type.at(x), b.seg.graph.tensors.at(x).q, lx);
  ir::Node nd;
  nd.name = name;
  nd.op = ir::OpKind::Slice;
  nd.inputs = {x};
  nd.outputs = {y};
  for (auto d : lx) nd.attrs.starts.push_back(starts[size_t(d)]), nd.attrs.ends.push_back(ends[size_t(d)]);
  b.seg.graph.nodes.push_back(nd);
}

}  // namespace loom::onnxfe
