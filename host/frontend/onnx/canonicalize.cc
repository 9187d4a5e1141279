// Identity bypass and constant folding at import (see canonicalize.h).
#include "frontend/onnx/canonicalize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/limits.h"
#include "common/tensor.h"
#include "frontend/onnx/host_ops.h"

namespace loom::onnxfe {

namespace {

bool is_output(const Model& m, const std::string& t) {
  return std::find(m.outputs.begin(), m.outputs.end(), t) != m.outputs.end();
}

/// Shape of a tensor whose dims shape inference fixed: a constant.
bool fold_shape(Model& m, const Node& n) {
  auto it = m.types.find(n.in(0));
  if (it == m.types.end() || !it->second.has_shape || n.outputs.size() != 1) return false;
  const auto& s = it->second.shape;
  if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 1; })) return false;
  const int64_t r = int64_t(s.size());
  auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  const int64_t b = clampi(n.get_i("start", 0)), e = clampi(n.get_i("end", r));
  Value v = Value::make(kInt64, {std::max<int64_t>(0, e - b)});
  for (int64_t k = b; k < e; ++k) v.i[size_t(k - b)] = s[size_t(k)];
  if (v.numel() == 0) return false;  // zero-sized tensors are not supported
  m.consts[n.outputs[0]] = std::move(v);
  return true;
}

/// Any other host op whose inputs are all constants, DequantizeLinear
/// excepted (a weight keeps the DequantizeLinear the QDQ folds read). The
/// value of a DequantizeLinear of constants is still a constant input here
/// (`dq_values`): a QuantizeLinear of it folds (a shared initializer
/// quantized again, as ONNX Runtime's quantizer leaves it).
bool fold_const(Model& m, const Node& n, const std::map<std::string, Value>& dq_values) {
  if (n.op == "DequantizeLinear" || n.outputs.empty()) return false;
  int64_t in_elems = 0;
  std::map<std::string, Value> env;
  for (const auto& i : n.inputs) {
    if (i.empty()) continue;
    auto c = m.consts.find(i);
    const Value* v = c != m.consts.end() ? &c->second : nullptr;
    if (!v)
      if (auto d = dq_values.find(i); d != dq_values.end()) v = &d->second;
    if (!v) return false;
    in_elems += v->numel();
    env[i] = *v;
  }
  if (env.empty() || !host_supports(n, m.opset, nullptr)) return false;
  // Never more data than it reads (a broadcast of two constants could
  // otherwise make a huge one): checked on the inferred shapes first.
  for (const auto& o : n.outputs) {
    auto t = m.types.find(o);
    if (o.empty() || t == m.types.end() || !t->second.has_shape) return false;
    const int64_t limit = in_elems + 4096;
    int64_t e = 1;
    for (auto d : t->second.shape) {
      if (d < 1 || e > limit / d) return false;  // (no overflow: e * d <= limit)
      e *= d;
    }
  }
  if (!run_host(m, n, env).is_ok()) return false;  // left for the run to report
  for (const auto& o : n.outputs) {
    auto v = env.find(o);
    if (v == env.end()) return false;
  }
  for (const auto& o : n.outputs) m.consts[o] = std::move(env.at(o));
  return true;
}

/// A step-1 Slice's start or end `v` on an axis of length `d`, as ONNX
/// clamps it: negative counts from the end, then into [0, d].
int64_t slice_bound(int64_t v, int64_t d) { return std::clamp<int64_t>(v < 0 ? (v < -d ? 0 : v + d) : v, 0, d); }

/// Whether `n` is a Slice of a constant 1-D vector (a shape) that selects
/// nothing: torch's `unflatten` writes `shape[dim + 1:]`, empty for the
/// last dim, and concatenates it. loom has no zero-sized tensors, so the
/// empty vector is only known as such, to the Concat that drops it.
bool empty_shape_slice(const Model& m, const Node& n) {
  if (n.op != "Slice" || n.inputs.size() < 3 || n.outputs.size() != 1) return false;
  const auto c = [&](size_t k) -> const Value* {
    auto it = k < n.inputs.size() && !n.in(k).empty() ? m.consts.find(n.in(k)) : m.consts.end();
    return it == m.consts.end() ? nullptr : &it->second;
  };
  const Value *x = c(0), *st = c(1), *en = c(2), *ax = c(3), *sp = c(4);
  if (!x || !st || !en || x->shape.size() != 1 || st->numel() != 1 || en->numel() != 1 || st->is_float() ||
      en->is_float() || (!n.in(3).empty() && (!ax || ax->numel() != 1 || ax->i[0] < -1 || ax->i[0] > 0)) ||
      (!n.in(4).empty() && (!sp || sp->numel() != 1 || sp->i[0] != 1)))
    return false;
  const int64_t d = x->numel();
  return slice_bound(en->i[0], d) <= slice_bound(st->i[0], d);
}

/// The output shape of a Reshape (allowzero 0) or a Slice whose other
/// inputs are constants, from its input's shape `s` (replaced); false
/// where it is not defined.
bool reshaped_or_sliced(const Model& m, const Node& n, std::vector<int64_t>* s) {
  const auto c = [&](size_t k) -> const Value* {
    auto it = k < n.inputs.size() && !n.in(k).empty() ? m.consts.find(n.in(k)) : m.consts.end();
    return it == m.consts.end() || it->second.is_float() ? nullptr : &it->second;
  };
  const int64_t total = shape_numel(*s), r = int64_t(s->size());
  if (n.op == "Reshape") {
    const Value* t = c(1);
    if (!t || n.get_i("allowzero", 0) != 0) return false;
    std::vector<int64_t> o;
    int64_t known = 1, free_at = -1;
    for (int64_t k = 0; k < t->numel(); ++k) {
      int64_t d = t->i[size_t(k)];
      if (d == 0 && k < r) d = (*s)[size_t(k)];
      if (d == -1 && free_at < 0) {
        free_at = k;
      } else if (d < 1) {
        return false;
      } else {
        known *= d;
        if (known > total) return false;
      }
      o.push_back(d);
    }
    if (free_at >= 0) {
      if (total % known != 0) return false;
      o[size_t(free_at)] = total / known;
    }
    if (shape_numel(o) != total) return false;
    *s = std::move(o);
    return true;
  }
  const Value *st = c(1), *en = c(2), *ax = c(3), *sp = c(4);
  if (!st || !en || st->numel() != en->numel() || (!n.in(3).empty() && (!ax || ax->numel() != st->numel())) ||
      (!n.in(4).empty() && (!sp || sp->numel() != st->numel())))
    return false;
  for (int64_t k = 0; k < st->numel(); ++k) {
    const int64_t a = ax ? (ax->i[size_t(k)] < 0 ? ax->i[size_t(k)] + r : ax->i[size_t(k)]) : k;
    if (a < 0 || a >= r || (sp && sp->i[size_t(k)] != 1)) return false;
    const int64_t d = (*s)[size_t(a)];
    const int64_t len = slice_bound(en->i[size_t(k)], d) - slice_bound(st->i[size_t(k)], d);
    if (len < 1) return false;
    (*s)[size_t(a)] = len;
  }
  return true;
}

/// The shape of every output of `n` where ONNX's shape inference left it
/// unknown and it follows from known ones: a Resize whose sizes or scales
/// became constants here (ONNX 1.12 does not propagate a Slice of a Shape
/// into them, as torchvision's `interpolate(size=x.shape[-2:])` exports
/// it) or a Reshape whose target became one (torch's `unflatten`), and
/// the ops after them that keep or broadcast their inputs' shapes, slice
/// them by constants or are a 2-D Conv, so that a Shape further on folds
/// too. True when it set one.
bool infer_shape(Model& m, const Node& n) {
  if (!n.domain.empty() || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const auto yt = m.types.find(n.outputs[0]);
  if (yt == m.types.end() || yt->second.type == 0 || yt->second.has_shape) return false;
  const auto shape_of = [&](const std::string& t) -> const std::vector<int64_t>* {
    if (auto c = m.consts.find(t); c != m.consts.end()) return &c->second.shape;
    auto it = m.types.find(t);
    return it != m.types.end() && it->second.has_shape ? &it->second.shape : nullptr;
  };
  static const std::set<std::string> kKeeps = {"QuantizeLinear", "DequantizeLinear", "Relu", "Sigmoid",  "Tanh",
                                               "HardSigmoid",    "HardSwish",        "Clip", "LeakyRelu"};
  static const std::set<std::string> kBroadcasts = {"Add", "Sub", "Mul", "Div"};
  const std::vector<int64_t>* x = n.inputs.empty() ? nullptr : shape_of(n.inputs[0]);
  if (!x) return false;
  std::vector<int64_t> s = *x;
  if (kBroadcasts.count(n.op)) {
    const std::vector<int64_t>* b = n.inputs.size() == 2 ? shape_of(n.inputs[1]) : nullptr;
    if (!b) return false;
    if (b->size() > s.size()) s.insert(s.begin(), b->size() - s.size(), 1);
    for (size_t k = 0; k < b->size(); ++k) {
      int64_t& d = s[s.size() - b->size() + k];
      const int64_t e = (*b)[k];
      if (d != e && d != 1 && e != 1) return false;
      d = d == 1 ? e : d;
    }
  } else if (n.op == "Conv" && s.size() == 4 && n.get_s("auto_pad", "NOTSET") == "NOTSET") {
    const std::vector<int64_t>* w = n.inputs.size() > 1 ? shape_of(n.inputs[1]) : nullptr;
    if (!w || w->size() != 4) return false;
    const auto st = n.get_ints("strides", {1, 1}), di = n.get_ints("dilations", {1, 1});
    const auto pa = n.get_ints("pads", {0, 0, 0, 0});
    if (st.size() != 2 || di.size() != 2 || pa.size() != 4) return false;
    s[1] = (*w)[0];
    for (size_t k = 0; k < 2; ++k) {
      if (st[k] < 1 || di[k] < 1) return false;
      s[2 + k] = (s[2 + k] + pa[k] + pa[k + 2] - ((*w)[2 + k] - 1) * di[k] - 1) / st[k] + 1;
    }
  } else if (n.op == "Reshape" || n.op == "Slice") {
    if (!reshaped_or_sliced(m, n, &s)) return false;
  } else if (n.op == "Resize" && m.opset >= 11) {
    const auto c = [&](size_t k) -> const Value* {
      auto it = m.consts.find(n.in(k));
      return n.in(k).empty() || it == m.consts.end() || it->second.numel() == 0 ? nullptr : &it->second;
    };
    if (const Value* sizes = c(3); sizes && size_t(sizes->numel()) == s.size()) {
      for (size_t k = 0; k < s.size(); ++k) s[k] = sizes->i[k];
    } else if (const Value* scales = c(2); scales && size_t(scales->numel()) == s.size()) {
      for (size_t k = 0; k < s.size(); ++k) s[k] = int64_t(std::floor(double(s[k]) * scales->at(int64_t(k))));
    } else {
      return false;
    }
  } else if (!kKeeps.count(n.op)) {
    return false;
  }
  int64_t e = 1;
  for (int64_t d : s) {
    if (d < 1 || e > limits::kMaxTensorElems / d) return false;
    e *= d;
  }
  yt->second.shape = std::move(s);
  yt->second.has_shape = true;
  return true;
}

}  // namespace

std::string Canonicalized::note() const {
  if (!identities && !folded && !shapes_inferred) return {};
  std::string s = "at import:";
  if (identities)
    s.append(1, ' ')
        .append(std::to_string(identities))
        .append(identities == 1 ? " Identity node bypassed" : " Identity nodes bypassed");
  if (identities && folded) s.append(1, ',');
  if (folded)
    s.append(1, ' ')
        .append(std::to_string(folded))
        .append(folded == 1 ? " node of constants computed once (constant folding)"
                            : " nodes of constants computed once (constant folding)");
  if ((identities || folded) && shapes_inferred) s.append(1, ',');
  if (shapes_inferred)
    s.append(1, ' ')
        .append(std::to_string(shapes_inferred))
        .append(shapes_inferred == 1 ? " shape inferred from them" : " shapes inferred from them");
  return s;
}

Canonicalized canonicalize(Model& m) {
  Canonicalized c;
  std::map<std::string, std::string> alias;  // Identity output -> its input
  auto resolve = [&](std::string t) {
    for (auto it = alias.find(t); it != alias.end(); it = alias.find(t)) t = it->second;
    return t;
  };
  std::vector<Node> bypassed;
  for (auto& n : m.nodes) {
    for (auto& i : n.inputs)
      if (!i.empty()) i = resolve(i);
    const bool identity = n.op == "Identity" && n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1;
    if (identity && !m.consts.count(n.inputs[0]) && !is_output(m, n.outputs[0])) {
      alias[n.outputs[0]] = n.inputs[0];
      ++c.identities;
      continue;
    }
    bypassed.push_back(std::move(n));
  }
  std::set<std::string> requantized;  // tensors a QuantizeLinear reads
  for (const auto& n : bypassed)
    if (n.op == "QuantizeLinear" && n.domain.empty() && !n.inputs.empty()) requantized.insert(n.inputs[0]);
  std::map<std::string, Value> dq_values;  // requantized outputs of DequantizeLinear nodes of constants
  std::set<std::string> empties;           // empty slices of constant shapes (empty_shape_slice)
  std::set<std::string> not_concat_input;  // tensors some other node reads (they must stay real)
  for (const auto& n : bypassed)
    if (n.op != "Concat" || !n.domain.empty()) not_concat_input.insert(n.inputs.begin(), n.inputs.end());
  not_concat_input.insert(m.outputs.begin(), m.outputs.end());
  std::vector<Node> kept;
  for (auto& n : bypassed) {
    if (n.op == "DequantizeLinear" && n.domain.empty() && n.outputs.size() == 1 && requantized.count(n.outputs[0])) {
      std::map<std::string, Value> env;
      bool all = true;
      for (const auto& i : n.inputs)
        if (!i.empty()) {
          auto c = m.consts.find(i);
          if (c == m.consts.end())
            all = false;
          else
            env[i] = c->second;
        }
      if (all && run_host(m, n, env).is_ok() && env.count(n.outputs[0]))
        dq_values[n.outputs[0]] = std::move(env.at(n.outputs[0]));
    }
    if (n.domain.empty() && !not_concat_input.count(n.outputs.empty() ? "" : n.outputs[0]) && empty_shape_slice(m, n)) {
      empties.insert(n.outputs[0]);
      ++c.folded;
      continue;
    }
    if (n.domain.empty() && n.op == "Concat" &&  // an empty shape slice adds nothing
        std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& i) { return !empties.count(i); }))
      std::erase_if(n.inputs, [&](const std::string& i) { return empties.count(i) != 0; });
    if (n.domain.empty() && (n.op == "Shape" ? fold_shape(m, n) : fold_const(m, n, dq_values))) {
      if (!std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return is_output(m, o); })) {
        ++c.folded;
        continue;
      }
      for (const auto& o : n.outputs) m.consts.erase(o);  // a graph output stays a node's
    }
    c.shapes_inferred += infer_shape(m, n);
    kept.push_back(std::move(n));
  }
  m.nodes = std::move(kept);
  // Constants no node reads any more (the float weights behind a folded
  // QuantizeLinear) are dropped.
  std::set<std::string> used(m.outputs.begin(), m.outputs.end());
  for (const auto& n : m.nodes) used.insert(n.inputs.begin(), n.inputs.end());
  if (c.folded)
    for (auto it = m.consts.begin(); it != m.consts.end();)
      it = used.count(it->first) ? std::next(it) : m.consts.erase(it);
  return c;
}

}  // namespace loom::onnxfe
