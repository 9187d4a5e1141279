// Identity bypass and constant folding at import (see canonicalize.h).
#include "frontend/onnx/canonicalize.h"

#include <algorithm>
#include <map>
#include <set>

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

}  // namespace

std::string Canonicalized::note() const {
  if (!identities && !folded) return {};
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
    if (n.domain.empty() && (n.op == "Shape" ? fold_shape(m, n) : fold_const(m, n, dq_values))) {
      if (!std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return is_output(m, o); })) {
        ++c.folded;
        continue;
      }
      for (const auto& o : n.outputs) m.consts.erase(o);  // a graph output stays a node's
    }
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
