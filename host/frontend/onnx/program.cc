// QDQ folding, partitioning into device segments and host ops, and the
// segment runner. Layout rule: ONNX tensors are NCHW; inside a segment
// rank-4 tensors are NHWC, converted at the segment's boundary (host
// transposes), and weights are converted once at import. uint8 tensors run
// as int8: a uint8 tensor q with zero point z is the int8 tensor q - 128 with
// zero point z - 128 (same real values), converted at the boundary.
#include "frontend/onnx/program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "common/rownorm.h"
#include "frontend/onnx/host_ops.h"
#include "ir/ir_util.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace loom::onnxfe {

namespace {

using Known = std::function<const Value*(const std::string&)>;

bool scalar_int_equal(const Value& v) {
  for (auto x : v.i)
    if (x != v.i[0]) return false;
  return !v.i.empty();
}

// ---- QDQ folding ------------------------------------------------------------

struct Uses {
  std::map<std::string, std::vector<size_t>> consumers;
  std::map<std::string, size_t> producer;
};

Uses uses_of(const Model& m) {
  Uses u;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    for (const auto& i : m.nodes[k].inputs)
      if (!i.empty()) u.consumers[i].push_back(k);
    for (const auto& o : m.nodes[k].outputs)
      if (!o.empty()) u.producer[o] = k;
  }
  return u;
}

/// The one node reading `t`, when `t` is not also a graph output.
const Node* sole_consumer(const Model& m, const Uses& u, const std::string& t) {
  auto it = u.consumers.find(t);
  if (it == u.consumers.end() || it->second.size() != 1) return nullptr;
  if (std::find(m.outputs.begin(), m.outputs.end(), t) != m.outputs.end()) return nullptr;
  return &m.nodes[it->second[0]];
}

/// Whether a Q/DQ node's scale and zero point (inputs 1 and 2) are known,
/// per-tensor and 8-bit.
bool per_tensor_8bit(const Known& known, const Node& n) {
  const Value* s = known(n.in(1));
  const Value* z = n.in(2).empty() ? nullptr : known(n.in(2));
  return s && z && s->numel() == 1 && z->numel() == 1 && (z->type == kInt8 || z->type == kUint8);
}

/// A DequantizeLinear of constants that no quantized op absorbed (LayerNorm's
/// gamma and beta) is a constant: computed once at import, with the host
/// op's own semantics.
int fold_constant_dq(Model& m) {
  int folded = 0;
  std::vector<Node> kept;
  for (auto& n : m.nodes) {
    bool all = n.op == "DequantizeLinear" && n.domain.empty() && n.outputs.size() == 1;
    for (const auto& i : n.inputs) all = all && (i.empty() || m.consts.count(i));
    std::map<std::string, Value> env;
    if (all) {
      for (const auto& i : n.inputs)
        if (!i.empty()) env[i] = m.consts.at(i);
      all = run_host(m, n, env).is_ok() && env.count(n.outputs[0]);
    }
    if (!all) {
      kept.push_back(std::move(n));
      continue;
    }
    m.consts[n.outputs[0]] = std::move(env.at(n.outputs[0]));
    ++folded;
  }
  m.nodes = std::move(kept);
  return folded;
}

/// Drops the nodes at `drop` (indices into m.nodes); a dropped node with an
/// entry in `at` is replaced by it, in its place (a fold's new node stands
/// where its chain's last node stood, so the order stays topological).
void replace_chains(Model& m, const std::set<size_t>& drop, std::map<size_t, Node>& at) {
  if (drop.empty()) return;
  std::vector<Node> kept;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    if (!drop.count(k)) kept.push_back(std::move(m.nodes[k]));
    else if (at.count(k)) kept.push_back(std::move(at.at(k)));
  }
  m.nodes = std::move(kept);
}

/// DequantizeLinear -> any graph of elementwise float ops on that one tensor
/// (scalar constants as their other operands: x * sigmoid(x), HardSwish,
/// either GELU form, a chain of unary ops) -> QuantizeLinear maps each 8-bit
/// input value to one output value: it becomes a loom QLinearLookup whose
/// 256-entry table is the graph run on every input value with the host ops
/// themselves (so the host and the fabric compute exactly what it did). A
/// requantizing DQ -> Q pair is the empty graph.
struct LookupRegion {
  std::vector<size_t> nodes;  // the elementwise ops, in model order
  const Node* q = nullptr;    // the QuantizeLinear that ends it
};

bool elementwise_float(const Node& n) {
  static const std::set<std::string> ops = {
      "Erf",      "Tanh",      "Sigmoid",     "Relu",     "Exp",  "Log", "Neg", "Abs", "Sqrt", "Reciprocal",
      "Identity", "HardSwish", "HardSigmoid", "Softplus", "Clip", "Add", "Sub", "Mul", "Div",  "Pow"};
  return n.domain.empty() && n.outputs.size() == 1 && ops.count(n.op) && host_supports(n, 0, nullptr);
}

/// The region of elementwise ops reading only DQ node `d`'s output (and
/// scalar constants), closed by one QuantizeLinear; nullopt when the values
/// escape it (another consumer, a graph output, a non-scalar operand).
std::optional<LookupRegion> lookup_region(const Model& m, const Uses& u, const Known& known, const Node& d) {
  constexpr size_t kMaxOps = 64;
  LookupRegion r;
  std::set<std::string> region{d.outputs[0]};
  std::set<size_t> in_region;
  std::vector<std::string> work{d.outputs[0]};
  while (!work.empty()) {
    const std::string t = work.back();
    work.pop_back();
    if (std::find(m.outputs.begin(), m.outputs.end(), t) != m.outputs.end()) return std::nullopt;
    auto cs = u.consumers.find(t);
    if (cs == u.consumers.end()) return std::nullopt;  // read by nothing: not this fold's business
    for (size_t c : cs->second) {
      const Node& nx = m.nodes[c];
      if (in_region.count(c) || &nx == r.q) continue;
      if (nx.op == "QuantizeLinear" && nx.domain.empty()) {
        if (r.q || nx.in(0) != t || !per_tensor_8bit(known, nx)) return std::nullopt;
        r.q = &nx;
        continue;
      }
      if (!elementwise_float(nx) || in_region.size() >= kMaxOps) return std::nullopt;
      in_region.insert(c);
      region.insert(nx.outputs[0]);
      work.push_back(nx.outputs[0]);
    }
  }
  if (!r.q) return std::nullopt;
  // Every operand from the region or a scalar float constant; the Q's input
  // read by the Q alone.
  for (size_t c : in_region)
    for (const auto& i : m.nodes[c].inputs) {
      if (i.empty() || region.count(i)) continue;
      const Value* v = known(i);
      if (!v || !v->is_float() || v->numel() != 1) return std::nullopt;
    }
  if (u.consumers.at(r.q->in(0)).size() != 1) return std::nullopt;
  r.nodes.assign(in_region.begin(), in_region.end());
  return r;
}

int fold_lookup_chains(Model& m, const Known& known) {
  Uses u = uses_of(m);
  std::set<size_t> drop;
  std::map<size_t, Node> at_q;  // the lookup that replaces the region ending at this QuantizeLinear
  int folded = 0;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    const Node& d = m.nodes[k];
    if (d.op != "DequantizeLinear" || !d.domain.empty() || drop.count(k) || known(d.in(0)) ||
        !per_tensor_8bit(known, d))
      continue;
    auto r = lookup_region(m, u, known, d);
    if (!r) continue;
    const size_t qk = size_t(r->q - m.nodes.data());
    if (drop.count(qk) || std::any_of(r->nodes.begin(), r->nodes.end(), [&](size_t c) { return drop.count(c); }))
      continue;
    // Every input value, through the region, in model order.
    std::map<std::string, Value> env;
    const int32_t xt = known(d.in(2))->type;
    Value x = Value::make(xt, {256});
    for (int64_t v = 0; v < 256; ++v) x.i[size_t(v)] = xt == kUint8 ? v : v - 128;
    env[d.in(0)] = x;
    std::vector<const Node*> order{&d};
    for (size_t c : r->nodes) order.push_back(&m.nodes[c]);
    order.push_back(r->q);
    bool ran = true;
    for (const Node* n : order) {
      for (const auto& i : n->inputs)
        if (!i.empty() && !env.count(i)) {
          const Value* c = known(i);
          if (!c) ran = false;
          else env[i] = *c;
        }
      ran = ran && run_host(m, *n, env).is_ok() && env.count(n->outputs[0]);
      if (!ran) break;
    }
    if (!ran || env.at(r->q->outputs[0]).numel() != 256) continue;
    Node f;
    f.name = r->nodes.empty()
                 ? d.name
                 : m.nodes[r->nodes.front()].name + (r->nodes.size() > 1 ? "+" + m.nodes[r->nodes.back()].name : "");
    f.op = "QLinearLookup";
    f.domain = "loom";
    const std::string table = f.name + "/table";
    m.consts[table] = env.at(r->q->outputs[0]);
    f.inputs = {d.in(0), d.in(1), d.in(2), table, r->q->in(1), r->q->in(2)};
    f.outputs = r->q->outputs;
    drop.insert(k);
    drop.insert(qk);
    drop.insert(r->nodes.begin(), r->nodes.end());
    at_q[qk] = std::move(f);
    ++folded;
  }
  // Each lookup takes the place of its region's QuantizeLinear (the order stays topological).
  replace_chains(m, drop, at_q);
  return folded;
}

/// A quantized Add or Mul whose operands are both functions of one 8-bit
/// tensor x (x itself, or a lookup of x read only here: SiLU as ONNX Runtime
/// quantizes it, x * sigmoid(x) with a QuantizeLinear between) is itself a
/// function of x: one lookup whose table is the ops run on every value of x
/// with the host ops (one pass instead of two, rounded as the host rounds).
int fold_lookup_pairs(Model& m, const Known& known) {
  Uses u = uses_of(m);
  std::set<size_t> drop;
  int folded = 0;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    Node& n = m.nodes[k];
    if (n.domain != "com.microsoft" || (n.op != "QLinearAdd" && n.op != "QLinearMul") || n.inputs.size() < 8) continue;
    // Operand i: the lookup producing it (read only here), and its base tensor.
    const Node* look[2] = {nullptr, nullptr};
    std::string base[2];
    for (int i = 0; i < 2; ++i) {
      const std::string& t = n.in(size_t(3 * i));
      base[i] = t;
      auto p = u.producer.find(t);
      if (p == u.producer.end()) continue;
      const Node& l = m.nodes[p->second];
      if (l.op == "QLinearLookup" && l.domain == "loom" && !drop.count(p->second) && u.consumers.at(t).size() == 1 &&
          std::find(m.outputs.begin(), m.outputs.end(), t) == m.outputs.end()) {
        look[i] = &l;
        base[i] = l.in(0);
      }
    }
    if (base[0] != base[1] || known(base[0]) || (!look[0] && !look[1])) continue;
    // x's scale and zero point: a direct operand's, else the first lookup's input's.
    const std::string xs_name = !look[0] ? n.in(1) : !look[1] ? n.in(4) : look[0]->in(1);
    const std::string xz_name = !look[0] ? n.in(2) : !look[1] ? n.in(5) : look[0]->in(2);
    const Value* xz = known(xz_name);
    if (!xz || xz->numel() != 1 || (xz->type != kInt8 && xz->type != kUint8) || !known(xs_name)) continue;
    std::map<std::string, Value> env;
    Value x = Value::make(xz->type, {256});
    for (int64_t v = 0; v < 256; ++v) x.i[size_t(v)] = xz->type == kUint8 ? v : v - 128;
    env[base[0]] = x;
    bool ran = true;
    for (const Node* s : {look[0], look[1], static_cast<const Node*>(&n)}) {
      if (!s) continue;
      for (const auto& i : s->inputs)
        if (!i.empty() && !env.count(i)) {
          const Value* c = known(i);
          if (!c)
            ran = false;
          else
            env[i] = *c;
        }
      ran = ran && run_host(m, *s, env).is_ok();
    }
    if (!ran || !env.count(n.outputs[0]) || env.at(n.outputs[0]).numel() != 256) continue;
    Node f;
    f.name = n.name;
    f.op = "QLinearLookup";
    f.domain = "loom";
    const std::string table = n.name + "/table";
    m.consts[table] = env.at(n.outputs[0]);
    f.inputs = {base[0], xs_name, xz_name, table, n.in(6), n.in(7)};
    f.outputs = n.outputs;
    for (const Node* l : look)
      if (l) drop.insert(size_t(l - m.nodes.data()));
    n = std::move(f);
    ++folded;
  }
  std::map<size_t, Node> none;
  replace_chains(m, drop, none);
  return folded;
}

/// DequantizeLinear -> Softmax or LayerNormalization over the last axis ->
/// QuantizeLinear, per-tensor 8-bit on both sides, becomes loom
/// QLinearSoftmax / QLinearLayerNorm: the integer row normalizations of
/// common/rownorm.h (ROWNORM on the fabric, the same integers on the host).
/// LayerNormalization's scale and bias must be float constants (after
/// fold_constant_dq) and its mean and inverse deviation outputs unused.
int fold_row_norms(Model& m, const Known& known) {
  Uses u = uses_of(m);
  std::set<size_t> drop;
  std::map<size_t, Node> at_q;
  int folded = 0;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    const Node& d = m.nodes[k];
    if (d.op != "DequantizeLinear" || !d.domain.empty() || known(d.in(0)) || !per_tensor_8bit(known, d)) continue;
    const Node* n = sole_consumer(m, u, d.outputs[0]);
    if (!n || !n->domain.empty() || n->in(0) != d.outputs[0]) continue;
    const bool ln = n->op == "LayerNormalization";
    if (!ln && n->op != "Softmax") continue;
    if (n->get_i("axis", ln || m.opset >= 13 ? -1 : 1) != -1) continue;
    bool extra = false;
    for (size_t o = 1; o < n->outputs.size(); ++o) extra = extra || (!n->outputs[o].empty() && u.consumers.count(n->outputs[o]));
    if (extra || n->outputs.empty()) continue;
    if (ln) {
      const Value *g = known(n->in(1)), *b = n->in(2).empty() ? nullptr : known(n->in(2));
      if (!g || !g->is_float() || (!n->in(2).empty() && (!b || !b->is_float() || b->numel() != g->numel()))) continue;
      if (n->get_i("stash_type", 1) != 1) continue;
    }
    const Node* q = sole_consumer(m, u, n->outputs[0]);
    if (!q || q->op != "QuantizeLinear" || !q->domain.empty() || q->in(0) != n->outputs[0] || !per_tensor_8bit(known, *q))
      continue;
    Node f;
    f.name = n->name;
    f.op = ln ? "QLinearLayerNorm" : "QLinearSoftmax";
    f.domain = "loom";
    f.inputs = {d.in(0), d.in(1), d.in(2)};
    if (ln) {
      std::string beta = n->in(2);
      if (beta.empty()) {
        beta = n->name + "/beta";
        Value z = Value::make(known(n->in(1))->type, known(n->in(1))->shape);
        m.consts[beta] = std::move(z);
      }
      f.inputs.push_back(n->in(1));
      f.inputs.push_back(beta);
      if (n->attrs.count("epsilon")) f.attrs["epsilon"] = n->attrs.at("epsilon");
    }
    f.inputs.push_back(q->in(1));
    f.inputs.push_back(q->in(2));
    f.outputs = q->outputs;
    drop.insert(k);
    drop.insert(size_t(n - m.nodes.data()));
    drop.insert(size_t(q - m.nodes.data()));
    at_q[size_t(q - m.nodes.data())] = std::move(f);
    ++folded;
  }
  replace_chains(m, drop, at_q);
  return folded;
}

/// DQ -> AveragePool | ReduceMean over H and W | BatchNormalization -> Q,
/// rewritten in place: com.microsoft QLinearAveragePool, QLinearGlobalAveragePool
/// (with a Reshape where keepdims is 0), or a depthwise 1x1 loom.QLinearConv
/// whose per-channel weight holds the BN's factor exactly (+-127 times its
/// scale) and whose int32 bias its shift. "" when folded, else why not.
std::string fold_channel_op(Model& m, const Known& known, const Known& param, Node& n, const Node& d, const Node& qc) {
  Node& q = const_cast<Node&>(qc);
  const std::vector<std::string> x_in{d.in(0), d.in(1), d.in(2)};
  if (n.op == "AveragePool") {
    n.domain = "com.microsoft";
    n.op = "QLinearAveragePool";
    n.inputs = {x_in[0], x_in[1], x_in[2], q.in(1), q.in(2)};
    n.outputs = q.outputs;
    q.op = "", q.outputs.clear();  // dropped below
    return "";
  }
  auto t = m.types.find(d.in(0));
  if (t == m.types.end() || !t->second.has_shape || t->second.shape.size() != 4)
    return "its input is not a 4-D tensor of known shape";
  const auto& xs = t->second.shape;
  const int64_t C = xs[1];
  if (n.op == "ReduceMean") {
    std::set<int64_t> axes;
    for (auto a : n.get_ints("axes")) axes.insert(a < 0 ? a + 4 : a);
    if (axes != std::set<int64_t>{2, 3}) return "it does not reduce over H and W only";
    const bool keep = n.get_i("keepdims", 1) != 0;
    const std::string gap = keep ? q.outputs[0] : n.name + "/gap";
    n.domain = "com.microsoft";
    n.op = "QLinearGlobalAveragePool";
    n.attrs.clear();
    n.inputs = {x_in[0], x_in[1], x_in[2], q.in(1), q.in(2)};
    n.outputs = {gap};
    m.types[gap] = TensorType{known(q.in(2))->type, {xs[0], C, 1, 1}, true};
    if (keep) {
      q.op = "", q.outputs.clear();
    } else {
      const std::string shape = n.name + "/shape";
      Value sv = Value::make(kInt64, {2});
      sv.i = {xs[0], C};
      m.consts[shape] = sv;
      q.op = "Reshape", q.domain = "", q.attrs.clear(), q.inputs = {gap, shape};
    }
    return "";
  }
  // BatchNormalization: y = x * a + s per channel.
  if (n.get_i("training_mode", 0) != 0) return "training mode";
  const Value *g = param(n.in(1)), *bb = param(n.in(2)), *mean = param(n.in(3)), *var = param(n.in(4));
  for (size_t k = 1; k <= 4; ++k)
    if (!param(n.in(k))) return "its " + std::string(k == 1 ? "scale" : k == 2 ? "bias" : k == 3 ? "mean" : "variance") +
                                " '" + n.in(k) + "' is not a constant";
  for (const Value* v : {g, bb, mean, var})
    if (!v->is_float() || v->numel() != C) return "its parameters are not float32 with one value a channel";
  const double eps = n.get_f("epsilon", 1e-5f), xsc = known(d.in(1))->f[0];
  Value w = Value::make(kInt8, {C, 1, 1, 1}), ws = Value::make(kFloat, {C}), bias = Value::make(kInt32, {C});
  for (int64_t c = 0; c < C; ++c) {
    const size_t k = size_t(c);
    const double a = double(g->f[k]) / std::sqrt(double(var->f[k]) + eps);
    const double s = double(bb->f[k]) - double(mean->f[k]) * a;
    if (!std::isfinite(a) || !std::isfinite(s)) return "its factor or shift is not finite";
    ws.f[k] = a != 0 ? float(std::fabs(a) / 127.0) : 1.0f;
    w.i[k] = a > 0 ? 127 : a < 0 ? -127 : 0;
    const double bq = std::nearbyint(s / (xsc * double(ws.f[k])));
    if (std::fabs(bq) > 2147483647.0) return "its shift is beyond an int32 bias at this scale";
    bias.i[k] = int64_t(bq);
  }
  const std::string base = n.name + "/dw";
  m.consts[base + "_w"] = w;
  m.consts[base + "_ws"] = ws;
  m.consts[base + "_wz"] = Value::make(kInt8, {1});
  m.consts[base + "_b"] = bias;
  n.domain = "loom";
  n.op = "QLinearConv";
  n.attrs.clear();
  n.attrs["group"] = Attr{2, C, 0, {}, {}, {}};
  n.attrs["kernel_shape"] = Attr{7, 0, 0, {}, {1, 1}, {}};
  n.inputs = {x_in[0], x_in[1], x_in[2], base + "_w", base + "_ws", base + "_wz", q.in(1), q.in(2), base + "_b"};
  n.outputs = q.outputs;
  q.op = "", q.outputs.clear();
  return "";
}

/// Folds the QDQ groups of `m`; `unfolded` gets, per node that sits in a
/// quantized context but was not folded, the reason.
int fold_qdq(Model& m, const Known& known, bool exact_host, std::map<std::string, std::string>* unfolded) {
  int folded = 0;
  Uses u = uses_of(m);
  std::set<size_t> drop;
  auto dq_of = [&](const std::string& t) -> const Node* {
    auto it = u.producer.find(t);
    if (it == u.producer.end()) return nullptr;
    const Node& d = m.nodes[it->second];
    if (d.op != "DequantizeLinear" || !d.domain.empty() || d.inputs.size() < 3 || d.in(2).empty()) return nullptr;
    if (!known(d.in(1)) || !known(d.in(2))) return nullptr;
    return &d;
  };
  auto sole_q = [&](const std::string& t) -> const Node* {
    const Node* c = sole_consumer(m, u, t);
    if (!c) return nullptr;
    const Node& q = *c;
    if (q.op != "QuantizeLinear" || !q.domain.empty() || q.in(2).empty()) return nullptr;
    const Value* s = known(q.in(1));
    const Value* z = known(q.in(2));
    if (!s || !z || s->numel() != 1 || z->numel() != 1) return nullptr;
    return &q;
  };
  auto scalar = [&](const Node* d) { return per_tensor_8bit(known, *d); };
  // Q's parameters equal DQ's: a value-moving op between them is exact on the integers.
  auto same_q = [&](const Node* d, const Node* q) {
    const Value *ds = known(d->in(1)), *dz = known(d->in(2)), *qs = known(q->in(1)), *qz = known(q->in(2));
    return dz->type == qz->type && ds->f[0] == qs->f[0] && dz->i[0] == qz->i[0];
  };
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    Node& n = m.nodes[k];
    if (!n.domain.empty()) continue;
    if (n.op == "Split") {
      // Each part quantized as the whole: Split on the integers.
      const Node* d0 = dq_of(n.in(0));
      if (!d0 || !scalar(d0)) continue;
      std::vector<const Node*> qs;
      for (const auto& o : n.outputs) {
        const Node* q = o.empty() ? nullptr : sole_q(o);
        if (!q || !same_q(d0, q)) break;
        qs.push_back(q);
      }
      if (qs.size() != n.outputs.size()) {
        (*unfolded)[n.name] = "its parts are not each quantized as its input";
        continue;
      }
      n.inputs[0] = d0->in(0);
      for (size_t o = 0; o < qs.size(); ++o) {
        drop.insert(u.consumers[n.outputs[o]][0]);
        n.outputs[o] = qs[o]->outputs[0];
      }
      ++folded;
      continue;
    }
    if (n.outputs.size() != 1) continue;
    if (n.op == "Concat") {
      // Each input requantized to the output's scale: com.microsoft.QLinearConcat.
      const Node* q = sole_q(n.outputs[0]);
      Node f;
      f.name = n.name;
      f.op = "QLinearConcat";
      f.domain = "com.microsoft";
      f.attrs["axis"] = n.attrs.count("axis") ? n.attrs.at("axis") : Attr{};
      f.outputs = q ? q->outputs : n.outputs;
      f.inputs = q ? std::vector<std::string>{q->in(1), q->in(2)} : std::vector<std::string>{};
      bool ok = q != nullptr;
      for (const auto& i : n.inputs) {
        const Node* d = dq_of(i);
        ok = ok && d && scalar(d) && known(d->in(2))->type == known(q->in(2))->type;
        if (!ok) break;
        f.inputs.insert(f.inputs.end(), {d->in(0), d->in(1), d->in(2)});
      }
      if (!ok) {
        if (q) (*unfolded)[n.name] = "an input does not come from a per-tensor 8-bit DequantizeLinear of its type";
        continue;
      }
      drop.insert(u.consumers[n.outputs[0]][0]);
      n = f;
      ++folded;
      continue;
    }
    if (n.op == "AveragePool" || n.op == "ReduceMean" || n.op == "BatchNormalization") {
      const Node* q = sole_q(n.outputs[0]);
      const Node* d0 = dq_of(n.in(0));
      if (!q || !d0 || !scalar(d0) || known(d0->in(2))->type != known(q->in(2))->type) continue;
      // Parameters may sit behind a DequantizeLinear of constants (the quantizer's weights).
      std::map<std::string, Value> dq_params;
      Known param = [&](const std::string& t) -> const Value* {
        if (const Value* v = known(t)) return v;
        auto p = u.producer.find(t);
        if (p == u.producer.end() || m.nodes[p->second].op != "DequantizeLinear") return nullptr;
        std::map<std::string, Value> env;
        for (const auto& i : m.nodes[p->second].inputs) {
          if (i.empty()) continue;
          const Value* c = known(i);
          if (!c) return nullptr;
          env[i] = *c;
        }
        if (!run_host(m, m.nodes[p->second], env).is_ok() || !env.count(t)) return nullptr;
        return &(dq_params[t] = env.at(t));
      };
      const std::string why = fold_channel_op(m, known, param, n, *d0, *q);
      if (!why.empty()) {
        (*unfolded)[n.name] = why;
        continue;
      }
      if (q->op.empty()) drop.insert(size_t(q - m.nodes.data()));
      ++folded;
      continue;  // fold_channel_op rewrote n and the Q in place
    }
    // Ops that only move or select values: DQ -> op -> Q with the same
    // quantization on both sides is the op on the integers (exact).
    const bool pass = n.op == "MaxPool" || n.op == "Flatten" || n.op == "Reshape" || n.op == "Transpose" ||
                      n.op == "Slice" || n.op == "Squeeze" || n.op == "Unsqueeze" ||
                      (n.op == "Gather" && known(n.in(1))) ||
                      (n.op == "Resize" && n.get_s("mode", "nearest") == "nearest");
    if (pass || n.op == "GlobalAveragePool") {
      const Node* q = sole_q(n.outputs[0]);
      const Node* d0 = dq_of(n.in(0));
      if (!q || !d0 || !scalar(d0)) continue;
      const Value *ds = known(d0->in(1)), *dz = known(d0->in(2)), *qs = known(q->in(1)), *qz = known(q->in(2));
      if (dz->type != qz->type) continue;
      Node f = n;
      f.outputs = q->outputs;
      if (pass) {
        if (ds->f[0] != qs->f[0] || dz->i[0] != qz->i[0]) continue;
        f.inputs[0] = d0->in(0);
      } else {
        f.op = "QLinearGlobalAveragePool";
        f.domain = "com.microsoft";
        f.attrs.clear();
        f.inputs = {d0->in(0), d0->in(1), d0->in(2), q->in(1), q->in(2)};
      }
      drop.insert(u.consumers[n.outputs[0]][0]);
      n = f;
      ++folded;
      continue;
    }
    const bool gemm = n.op == "Gemm";
    const bool conv = n.op == "Conv", mm = n.op == "MatMul" || gemm, add = n.op == "Add", mul = n.op == "Mul";
    if (!conv && !mm && !add && !mul) continue;
    if (gemm && (n.get_i("transA", 0) != 0 || n.get_f("alpha", 1.0f) != 1.0f || n.get_f("beta", 1.0f) != 1.0f)) continue;
    const Node* q = sole_q(n.outputs[0]);
    const Node* d0 = dq_of(n.in(0));
    const Node* d1 = dq_of(n.in(1));
    auto skip = [&](const std::string& why) { (*unfolded)[n.name] = why; };
    if (!q || !d0 || !d1 || !scalar(d0)) {
      if (d0 || d1 || q)
        skip(!q    ? "its output is not read by exactly one QuantizeLinear with constant per-tensor parameters"
             : !d0 ? "input '" + n.in(0) + "' does not come from a DequantizeLinear with constant parameters"
             : !d1 ? "input '" + n.in(1) + "' does not come from a DequantizeLinear with constant parameters"
                   : "input '" + n.in(0) + "' has per-channel quantization");
      continue;
    }
    Node f;
    f.name = n.name;
    f.attrs = conv ? n.attrs : std::map<std::string, Attr>{};
    f.outputs = q->outputs;
    if (add || mul) {
      if (!scalar(d1)) {
        skip("input '" + n.in(1) + "' has per-channel quantization");
        continue;
      }
      f.op = add ? "QLinearAdd" : "QLinearMul";
      f.domain = "com.microsoft";
      f.inputs = {d0->in(0), d0->in(1), d0->in(2), d1->in(0), d1->in(1), d1->in(2), q->in(1), q->in(2)};
    } else if (!known(d1->in(0))) {
      // A product of two activations (attention's scores and context).
      if (gemm || conv || !n.in(2).empty() || !scalar(d1)) {
        skip("a product of two activations needs per-tensor quantization, no bias, MatMul");
        continue;
      }
      f.op = "QLinearMatMul";
      f.domain = "loom";
      f.inputs = {d0->in(0), d0->in(1), d0->in(2), d1->in(0), d1->in(1), d1->in(2), q->in(1), q->in(2)};
    } else {
      const Value* w = known(d1->in(0));
      const Value* ws = known(d1->in(1));
      const Value* wz = known(d1->in(2));
      if (w->is_float() || !scalar_int_equal(*wz)) {
        skip(w->is_float() ? "its weights are float" : "its weight zero points differ between channels");
        continue;
      }
      f.op = conv ? "QLinearConv" : "QLinearMatMul";
      f.domain = "loom";
      f.inputs = {d0->in(0), d0->in(1), d0->in(2), d1->in(0), d1->in(1), d1->in(2), q->in(1), q->in(2)};
      if (mm && w->shape.size() != 2) {
        skip("its constant operand has rank " + std::to_string(w->shape.size()) + ", not 2");
        continue;
      }
      if (ws->numel() != 1) {
        // Per-channel weight scales must run along the output channels:
        // axis 0 of a Conv weight or of Gemm's transposed B, axis 1 of B.
        int64_t axis = d1->get_i("axis", 1);
        if (axis < 0) axis += int64_t(w->shape.size());
        const bool trans_b = gemm && n.get_i("transB", 0) != 0;
        if (axis != ((conv || trans_b) ? 0 : 1)) {
          skip("per-channel weight scales do not run along the output channels");
          continue;
        }
      }
      if (gemm && n.get_i("transB", 0) != 0) {
        // Gemm's B [N, K] becomes a constant [K, N] (per-channel scales stay per N).
        const int64_t N = w->shape[0], K = w->shape[1];
        Value wt = Value::make(w->type, {K, N});
        for (int64_t r = 0; r < N; ++r)
          for (int64_t c = 0; c < K; ++c) wt.i[size_t(c * N + r)] = w->i[size_t(r * K + c)];
        const std::string wname = n.name + "/b_t";
        m.consts[wname] = std::move(wt);
        f.inputs[3] = wname;
        w = &m.consts[wname];
      }
      if (!n.in(2).empty()) {
        // Bias: an int32 tensor behind a DequantizeLinear (what ONNX Runtime
        // writes), or a float constant quantized with x_scale * w_scale.
        const Value* xs = known(d0->in(1));
        const int64_t mch = w->shape.empty() ? 1 : conv ? w->shape[0] : w->shape[1];
        Value bq = Value::make(kInt32, {mch});
        auto bit = u.producer.find(n.in(2));
        const Value* bf = known(n.in(2));
        // A bias behind a DequantizeLinear of constants: its integers as they
        // are when they are int32 at x_scale * w_scale (ONNX Runtime's bias),
        // else its real values, quantized below (a shared bias quantized
        // for another layer's scales, or as an int8 weight).
        const Node* bdq = bit != u.producer.end() && m.nodes[bit->second].op == "DequantizeLinear" &&
                                  m.nodes[bit->second].domain.empty()
                              ? &m.nodes[bit->second]
                              : nullptr;
        Value bdq_real;
        bool exact = false;
        if (bdq && known(bdq->in(0)) && known(bdq->in(1))) {
          const Value *bi = known(bdq->in(0)), *bs = known(bdq->in(1));
          const Value* bz = bdq->in(2).empty() ? nullptr : known(bdq->in(2));
          exact = bi->type == kInt32 && bi->numel() == mch && (!bz || scalar_int_equal(*bz)) &&
                  (!bz || bz->i[0] == 0) && (bs->numel() == 1 || bs->numel() == mch);
          for (int64_t c = 0; exact && c < mch; ++c) {
            const double want = double(xs->f[0]) * double(ws->numel() == 1 ? ws->f[0] : ws->f[size_t(c)]);
            const double got = bs->f[bs->numel() == 1 ? 0 : size_t(c)];
            exact = std::fabs(got - want) <= 1e-6 * want;
          }
          if (exact) {
            bq.i = bi->i;
          } else {
            std::map<std::string, Value> env;
            for (const auto& i : bdq->inputs)
              if (!i.empty() && known(i)) env[i] = *known(i);
            if (run_host(m, *bdq, env).is_ok() && env.count(n.in(2))) {
              bdq_real = std::move(env.at(n.in(2)));
              bf = &bdq_real;
            }
          }
        }
        if (exact) {
        } else if (bf && bf->is_float() && bf->numel() == mch) {
          for (int64_t c = 0; c < mch; ++c) {
            const double s = double(xs->f[0]) * double(ws->numel() == 1 ? ws->f[0] : ws->f[size_t(c)]);
            bq.i[size_t(c)] = int64_t(std::clamp(std::nearbyint(double(bf->f[size_t(c)]) / s), -2147483648.0, 2147483647.0));
          }
        } else {
          skip("its bias '" + n.in(2) + "' is neither a constant nor an int32 constant behind a DequantizeLinear");
          continue;
        }
        const std::string bname = n.name + "/bias_q";
        m.consts[bname] = bq;
        f.inputs.push_back(bname);
      }
    }
    drop.insert(u.consumers[n.outputs[0]][0]);
    n = f;
    ++folded;
  }
  if (!drop.empty()) {
    std::vector<Node> kept;
    for (size_t k = 0; k < m.nodes.size(); ++k)
      if (!drop.count(k)) kept.push_back(std::move(m.nodes[k]));
    m.nodes = std::move(kept);
    // Dead-code elimination: DequantizeLinear nodes now feeding nothing.
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> used(m.outputs.begin(), m.outputs.end());
      for (const auto& n : m.nodes)
        for (const auto& i : n.inputs) used.insert(i);
      std::vector<Node> live;
      for (auto& n : m.nodes) {
        const bool any = std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return used.count(o); });
        if (any) live.push_back(std::move(n));
        else changed = true;
      }
      m.nodes = std::move(live);
    }
  }
  // What no quantized op absorbed: constant DequantizeLinear nodes left over,
  // then chains of float elementwise ops between a DQ and a Q.
  folded += fold_constant_dq(m);
  folded += fold_lookup_chains(m, known);
  folded += fold_lookup_pairs(m, known);
  return folded + (exact_host ? 0 : fold_row_norms(m, known));
}

// ---- device mapping -------------------------------------------------------

/// A permutation of dims: dim i of a view is dim p[i] of what it views.
using Perm = std::vector<int64_t>;

Perm identity(size_t rank) {
  Perm p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = int64_t(i);
  return p;
}
/// Where a rank-4 tensor of a convolution network lives: NHWC.
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
/// Whether viewing `s` through `p` keeps the row-major element order (the
/// dims larger than 1 stay in order): a reshape, not a data movement.
bool keeps_order(const std::vector<int64_t>& s, const Perm& p) {
  int64_t last = -1;
  for (auto d : p) {
    if (s[size_t(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

struct SegBuilder {
  const Model& m;
  const Known& known;
  Segment seg;
  std::map<std::string, std::vector<int64_t>> onnx_shape;  // ONNX-side shape of every segment tensor
  std::map<std::string, int32_t> onnx_type;
  /// The device layout of every ONNX-named segment tensor: device dim i is
  /// ONNX dim layout[i]. NHWC for the rank-4 tensors of convolutions, the
  /// ONNX order for everything else (transformer tensors of any rank). Views
  /// in other orders (a grouped matmul's operands) are unnamed helpers.
  std::map<std::string, Perm> layout;
  /// PARAM bytes of the configuration (0: not checked here, the compiler does).
  uint64_t param_bytes = 0;

  std::vector<int64_t> shape_of(const std::string& t) const {
    if (const Value* v = known(t)) return v->shape;
    auto it = m.types.find(t);
    return it != m.types.end() && it->second.has_shape ? it->second.shape : std::vector<int64_t>{};
  }
  int32_t type_of(const std::string& t) const {
    if (const Value* v = known(t)) return v->type;
    auto it = m.types.find(t);
    return it != m.types.end() ? it->second.type : 0;
  }
  // Declares activation `t` with quantization (scale, zp on the ONNX side),
  // in layout `want` (default: NHWC at rank 4) when new. False when it
  // already exists with different quantization.
  bool activation(const std::string& t, double scale, int64_t zp, bool* is_new, const Perm* want = nullptr) {
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
  /// Declares the ONNX tensor `y` (shape `ysh`, `type`) produced on the
  /// device with quantization `q` (device side), in layout `l`.
  ir::TensorInfo& declare(const std::string& y, const std::vector<int64_t>& ysh, int32_t type, const ir::QParams& q,
                          const Perm& l) {
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
  bool in_seg(const std::string& t) const { return seg.graph.tensors.count(t) != 0; }
  /// Makes `t` a segment input when a QuantizeLinear with constant per-tensor
  /// parameters produced it (its quantization is then known): a layout op
  /// right after the model's input Q runs on the fabric too.
  bool adopt(const std::string& t) {
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

  const ir::Node* producer(const std::string& t) const {
    for (const auto& nd : seg.graph.nodes)
      if (nd.outputs[0] == t) return &nd;
    return nullptr;
  }
  /// Emits `out` = the device tensor `src` viewed through `p` (dim i of out
  /// is dim p[i] of src), as a device transpose or, where the element order
  /// stays, a reshape (no instructions). Looks through the transposes that
  /// made `src`, so a transpose undone (or completed) by a later one moves
  /// the data once or not at all; a transpose left unread is dropped when
  /// the segment closes.
  void permute_into(std::string src, Perm p, const std::string& out, const std::string& name) {
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
  /// The device tensor holding ONNX tensor `t` with its dims in order `want`
  /// and shape `shape` (default: the permuted ONNX shape; any shape of the
  /// same element count and order): `t` itself or a helper view, whose
  /// nodes are named `reader` (the node and operand that read it).
  std::string view(const std::string& t, const Perm& want, const std::string& reader,
                   std::vector<int64_t> shape = {}) {
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
};

float f0(const Value* v) { return v->f[0]; }
int64_t i0(const Value* v) { return v->i[0]; }
/// Whether every value is a single one (per-tensor quantization).
bool scalars(std::initializer_list<const Value*> vs) {
  return std::all_of(vs.begin(), vs.end(), [](const Value* v) { return v->numel() == 1; });
}
/// Device-side quantization of scale `s` and zero point `z` (a uint8 zero
/// point is 128 lower on the int8 fabric).
ir::QParams device_q(const Value* s, const Value* z) {
  ir::QParams q;
  q.scale = {f0(s)};
  q.zero_point = int32_t(i0(z) - (z->type == kUint8 ? 128 : 0));
  return q;
}

// ---- layout ops: concat, slice, split, gather, squeeze/unsqueeze -----------
// Each returns "" when `n` became device ops in `b`, else why not (map_device
// then restores `b`).

/// Device dim of ONNX axis `a` in layout `l`.
int64_t device_axis(const Perm& l, int64_t a) { return int64_t(std::find(l.begin(), l.end(), a) - l.begin()); }

/// `y` = the ONNX tensor `x` (in the segment) reshaped to `ysh`: a view in
/// ONNX order, then a free reshape (NHWC kept where the order is the same).
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

/// `y` = x[starts : ends] (ONNX order, step 1) as a device slice in x's layout.
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

/// com.microsoft.QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per
/// input): each input in the output's layout, requantized by the copy.
std::string map_concat(SegBuilder& b, const Node& n) {
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
  return "";
}

/// Slice (constant starts/ends/axes, steps 1), Split, Gather of constant
/// indices that form one range, Squeeze, Unsqueeze on an int8/uint8 tensor
/// of the segment.
std::string map_select(SegBuilder& b, const Node& n) {
  const Known& K = b.known;
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
  b.seg.nodes.push_back(n.name);
  return "";
}

/// com.microsoft QLinearAveragePool as an AVGPOOL layer.
std::string map_avgpool(SegBuilder& b, const Node& n) {
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
  return "";
}

// Tries to express `n` as device ops in `b`; on failure `b` is unchanged.
bool map_device(SegBuilder& b, const Node& n, std::string* why) {
  const Known& K = b.known;
  auto all_known = [&](std::initializer_list<size_t> idx) {
    for (size_t k : idx)
      if (n.in(k).empty() || !K(n.in(k))) return false;
    return true;
  };
  const Segment saved_seg = b.seg;
  const auto saved_shape = b.onnx_shape;
  const auto saved_type = b.onnx_type;
  const auto saved_layout = b.layout;
  auto fail = [&](const std::string& w) {
    b.seg = saved_seg;
    b.onnx_shape = saved_shape;
    b.onnx_type = saved_type;
    b.layout = saved_layout;
    *why = w;
    return false;
  };
  auto new_input = [&](const std::string& t, bool fresh) {
    if (fresh) b.seg.graph.inputs.push_back(t);
  };
  const bool qconv = (n.op == "QLinearConv" && (n.domain.empty() || n.domain == "loom"));
  const bool qmm = (n.op == "QLinearMatMul" && (n.domain.empty() || n.domain == "loom"));
  if (qmm && !n.in(3).empty() && !K(n.in(3))) {
    // Two activations: a [..., M, K] times b [..., K, N] with equal batch
    // dims, one GEMM group per batch element (attention's heads): a viewed
    // as [M, G*K] (the batch between rows and K), b as [G, K, N], and the
    // result [M, G*N] viewed back into ONNX order. A view that only
    // relabels dims costs nothing; one that moves data is a DMA transpose.
    if (!all_known({1, 2, 4, 5, 6, 7})) return fail("quantization parameters are not constants");
    if (n.inputs.size() > 8 && !n.in(8).empty()) return fail("a bias on a product of two activations");
    const Value *as = K(n.in(1)), *az = K(n.in(2)), *bs = K(n.in(4)), *bz = K(n.in(5)), *ys = K(n.in(6)),
                *yz = K(n.in(7));
    if (!scalars({as, az, bs, bz, ys, yz})) return fail("quantization must be per-tensor");
    const std::string a = n.in(0), bt = n.in(3), y = n.outputs[0];
    const auto ash = b.shape_of(a), bsh = b.shape_of(bt);
    const size_t r = ash.size();
    if (r < 2 || bsh.size() != r) return fail("a and b need equal ranks of at least 2");
    if (!std::equal(ash.begin(), ash.end() - 2, bsh.begin())) return fail("batch dims differ (no broadcasting)");
    if (ash[r - 1] != bsh[r - 2]) return fail("inner dimensions differ");
    const int32_t yt = yz->type;
    if (yt != kInt8 && yt != kUint8) return fail("output must be int8 or uint8");
    if (b.in_seg(y)) return fail("output defined twice");
    int64_t G = 1;
    for (size_t d = 0; d + 2 < r; ++d) G *= ash[d];
    const int64_t M = ash[r - 2], Kd = ash[r - 1], N = bsh[r - 1];
    const Perm id = identity(r);
    bool f1 = false, f2 = false;
    if (!b.activation(a, f0(as), i0(az), &f1, &id)) return fail("input quantization differs from its producer's");
    new_input(a, f1);
    if (bt == a) return fail("a product of a tensor with itself");
    if (!b.activation(bt, f0(bs), i0(bz), &f2, &id)) return fail("input quantization differs from its producer's");
    new_input(bt, f2);
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
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (qconv || qmm) {
    if (!all_known({1, 2, 3, 4, 5, 6, 7})) return fail("weights or quantization parameters are not constants");
    const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *w = K(n.in(3)), *ws = K(n.in(4)), *wz = K(n.in(5)),
                *ys = K(n.in(6)), *yz = K(n.in(7));
    const Value* bias = n.inputs.size() > 8 && !n.in(8).empty() ? K(n.in(8)) : nullptr;
    if (n.inputs.size() > 8 && !n.in(8).empty() && !bias) return fail("bias is not a constant");
    if (!scalars({xs, xz, ys, yz})) return fail("activation quantization must be per-tensor");
    if (!scalar_int_equal(*wz)) return fail("per-channel weight zero points differ");
    const int32_t wt = w->type;
    if (wt != kInt8 && wt != kUint8) return fail("weights must be int8 or uint8");
    const int64_t woff = wt == kUint8 ? 128 : 0;
    const std::string x = n.in(0), y = n.outputs[0];
    const int32_t yt = yz->type;
    if (b.type_of(y) != yt && b.type_of(y) != 0) return fail("output type differs from its zero point's type");
    bool fresh = false;
    if (!b.activation(x, f0(xs), i0(xz), &fresh)) return fail("input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's");
    new_input(x, fresh);
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
      if (xsh.size() != 4 || w->shape.size() != 4) return fail("only 2-D convolutions run on the fabric");
      const auto dil = n.get_ints("dilations", {1, 1});
      if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1) return fail("dilations are not 2-D");
      if (n.get_s("auto_pad", "NOTSET") != "NOTSET") return fail("auto_pad other than NOTSET");
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
      if (st.size() != 2 || pads.size() != 4) return fail("strides/pads are not 2-D");
      if (pads[0] >= KH || pads[2] >= KH || pads[1] >= KW || pads[3] >= KW) return fail("padding not smaller than the kernel");
      if (g < 1 || xsh[1] % g || M % g || cpg * g != xsh[1]) return fail("group does not fit");
      nd.op = ir::OpKind::Conv2d;
      nd.attrs.kernel_h = KH, nd.attrs.kernel_w = KW, nd.attrs.stride_h = st[0], nd.attrs.stride_w = st[1];
      nd.attrs.pad_top = pads[0], nd.attrs.pad_left = pads[1], nd.attrs.pad_bottom = pads[2], nd.attrs.pad_right = pads[3];
      nd.attrs.groups = g;
      wi.shape = {KH, KW, cpg, M};
      wi.data = Tensor(DType::I8, wi.shape);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < cpg; ++c)
          for (int64_t r = 0; r < KH; ++r)
            for (int64_t s = 0; s < KW; ++s)
              wi.data.i8()[((r * KW + s) * cpg + c) * M + m] = int8_t(w->i[size_t(((m * cpg + c) * KH + r) * KW + s)] - woff);
      const int64_t oh = (xsh[2] + pads[0] + pads[2] - KH) / st[0] + 1, ow = (xsh[3] + pads[1] + pads[3] - KW) / st[1] + 1;
      if (oh < 1 || ow < 1) return fail("empty output");
      ysh = {xsh[0], M, oh, ow};
      channels = M;
    } else {
      if (xsh.size() < 2 || w->shape.size() != 2)
        return fail("only [..., M, K] times a constant [K, N] runs on the fabric");
      const int64_t K2 = w->shape[0], N = w->shape[1];
      if (xsh.back() != K2) return fail("inner dimensions differ");
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
    if (ws->numel() != 1 && ws->numel() != channels) return fail("weight scale count does not match the channels");
    b.seg.graph.tensors[wi.name] = wi;
    if (bias) {
      if (bias->type != kInt32 || bias->numel() != channels) return fail("bias is not int32 with one value per channel");
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
    if (b.in_seg(y)) return fail("output defined twice");
    if (yt != kInt8 && yt != kUint8) return fail("output must be int8 or uint8");
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
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if ((n.op == "QLinearAdd" || n.op == "QLinearMul") && n.domain == "com.microsoft") {
    const bool mul = n.op == "QLinearMul";
    if (!all_known({1, 2, 4, 5, 6, 7})) return fail("quantization parameters are not constants");
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
    if (!scalars({as, az, bs, bz, ys, yz})) return fail("quantization must be per-tensor");
    if (ash.empty() || K(a)) return fail("no activation operand with a static shape");
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
      return fail(std::string("the fabric's ") + (mul ? "mul" : "add") +
                  " broadcasts a constant, or an activation over the leading dims of the other's device layout "
                  "(e.g. [1,C,1,1] over [1,C,H,W])");
    if (b.type_of(a) != yz->type || b.type_of(bt) != yz->type) return fail("mixed int8/uint8 operands");
    const int64_t off = yz->type == kUint8 ? 128 : 0;
    bool f1 = false, f2 = false;
    if (!b.activation(a, f0(as), i0(az), &f1)) return fail("input quantization differs from its producer's");
    new_input(a, f1);
    const Perm la = b.layout.at(a);
    std::string bv;
    if (bc) {
      if (bc->type != kInt8 && bc->type != kUint8) return fail("constant operand is not int8/uint8");
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
      if (!b.activation(bt, f0(bs), i0(bz), &f2, &la)) return fail("input quantization differs from its producer's");
      new_input(bt, f2);
      bv = b.view(bt, la, n.name + "/b");
    } else if (f0(as) != f0(bs) || i0(az) != i0(bz)) {
      return fail("one tensor with two quantizations");
    } else {
      bv = a;
    }
    const std::string y = n.outputs[0];
    if (b.in_seg(y)) return fail("output defined twice");
    const ir::QParams yq = device_q(ys, yz);
    b.declare(y, ash, yz->type, yq, la);
    ir::Node nd;
    nd.name = n.name;
    nd.op = mul ? ir::OpKind::Mul : ir::OpKind::Add;
    nd.inputs = {a, bv};
    nd.outputs = {y};
    b.seg.graph.nodes.push_back(nd);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if ((n.op == "QLinearSoftmax" || n.op == "QLinearLayerNorm") && n.domain == "loom") {
    // ROWNORM over the last axis, which must be the device tensor's last
    // axis (a view otherwise). Parameters as the host op derives them.
    const bool ln = n.op == "QLinearLayerNorm";
    const size_t iy = ln ? 5 : 3;
    if (ln ? !all_known({1, 2, 3, 4, 5, 6}) : !all_known({1, 2, 3, 4}))
      return fail("the quantization parameters are not constants");
    const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(iy)), *yz = K(n.in(iy + 1));
    if (!scalars({xs, xz, ys, yz}) || (yz->type != kInt8 && yz->type != kUint8))
      return fail("not per-tensor 8-bit quantization");
    const std::string x = n.in(0), y = n.outputs[0];
    if (b.in_seg(y)) return fail("output defined twice");
    bool fresh = false;
    const Perm in_order = identity(b.shape_of(x).size());  // a new segment input: in ONNX order, rows last
    if (!b.activation(x, f0(xs), i0(xz), &fresh, &in_order))
      return fail("input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's");
    new_input(x, fresh);
    const auto& xsh = b.onnx_shape.at(x);
    const int64_t row = xsh.empty() ? 1 : xsh.back();
    if (row < 1 || row > 65535) return fail("a row of " + std::to_string(row) + " elements (ROWNORM takes 1..65535)");
    const int64_t param = ln ? 12 * row : 512;
    if (b.param_bytes && uint64_t(param) > b.param_bytes)
      return fail("a row of " + std::to_string(row) + " channels needs " + std::to_string(param) +
                  " bytes of PARAM, the configuration has " + std::to_string(b.param_bytes));
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
        return fail("gamma and beta are not float32 with one value per channel");
      std::vector<LayerNormChannel> ch;
      uint32_t eps = 0;
      std::string why;
      if (!layernorm_channels(std::vector<float>(g->f.begin(), g->f.end()), std::vector<float>(be->f.begin(), be->f.end()),
                              f0(ys), &ch, &why) ||
          !layernorm_eps(n.get_f("epsilon", 1e-5f), f0(xs), uint64_t(row), &eps, &why))
        return fail(why);
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
      if (!softmax_params(f0(xs), f0(ys), &sp, &why)) return fail(why);
    }
    b.declare(y, xsh, yz->type, yq, ly);
    nd.outputs = {y};
    b.seg.graph.nodes.push_back(nd);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.op == "QLinearLookup" && n.domain == "loom") {
    // ELTWISE lut: the table, shifted into the device's int8 codes.
    if (!all_known({1, 2, 3, 4, 5})) return fail("the table or quantization parameters are not constants");
    const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *tv = K(n.in(3)), *ys = K(n.in(4)), *yz = K(n.in(5));
    if (!scalars({xs, xz, ys, yz}) || tv->numel() != 256 ||
        tv->type != yz->type || (yz->type != kInt8 && yz->type != kUint8))
      return fail("not a per-tensor 8-bit lookup");
    const std::string x = n.in(0), y = n.outputs[0];
    if (b.in_seg(y)) return fail("output defined twice");
    bool fresh = false;
    if (!b.activation(x, f0(xs), i0(xz), &fresh)) return fail("input '" + x + "' has no int8/uint8 static shape or its quantization differs from its producer's");
    new_input(x, fresh);
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
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.op == "QLinearAveragePool" && n.domain == "com.microsoft") {
    const std::string w = map_avgpool(b, n);
    if (!w.empty()) return fail(w);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.op == "QLinearGlobalAveragePool" && n.domain == "com.microsoft") {
    if (!all_known({1, 2, 3, 4})) return fail("quantization parameters are not constants");
    const Value *xs = K(n.in(1)), *xz = K(n.in(2)), *ys = K(n.in(3)), *yz = K(n.in(4));
    if (n.get_i("channels_last", 0) != 0) return fail("channels_last");
    const std::string x = n.in(0), y = n.outputs[0];
    const int32_t xt = b.type_of(x);
    if (xt != yz->type) return fail("input and output types differ");
    auto xsh = b.shape_of(x);
    if (xsh.size() != 4) return fail("only 2-D pooling runs on the fabric");
    bool fresh = false;
    if (!b.activation(x, f0(xs), i0(xz), &fresh)) return fail("input quantization differs from its producer's");
    new_input(x, fresh);
    const std::vector<int64_t> ysh{xsh[0], xsh[1], 1, 1};
    if (b.in_seg(y)) return fail("output defined twice");
    const ir::QParams yq = device_q(ys, yz);
    b.declare(y, ysh, xt, yq, default_layout(4));
    ir::Node nd;
    nd.name = n.name;
    nd.op = ir::OpKind::GlobalAvgPool;
    nd.inputs = {b.view(x, default_layout(4), n.name + "/x")};
    nd.outputs = {y};
    b.seg.graph.nodes.push_back(nd);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if ((n.op == "Flatten" || n.op == "Reshape") && n.domain.empty()) {
    const std::string x = n.in(0), y = n.outputs[0];
    if (!b.in_seg(x)) return fail("a reshape alone is left to the host");
    const auto xsh = b.onnx_shape[x];
    std::vector<int64_t> ysh;
    int64_t total = 1;
    for (auto d : xsh) total *= d;
    if (n.op == "Flatten") {
      int64_t axis = n.get_i("axis", 1);
      if (axis < 0) axis += int64_t(xsh.size());
      if (axis < 0 || axis > int64_t(xsh.size())) return fail("axis out of range");
      int64_t a = 1;
      for (int64_t k = 0; k < axis; ++k) a *= xsh[size_t(k)];
      ysh = {a, total / a};
    } else {
      const Value* sv = K(n.in(1));
      if (!sv) return fail("shape is not a constant");
      int64_t known_prod = 1, neg = -1;
      for (int64_t k = 0; k < sv->numel(); ++k) {
        int64_t d = sv->i[size_t(k)];
        if (d == 0 && n.get_i("allowzero", 0) == 0 && k < int64_t(xsh.size())) d = xsh[size_t(k)];
        if (d == -1 && neg < 0) {
          neg = k;
        } else if (d < 1) {
          return fail("unsupported shape value");
        } else {
          known_prod *= d;
        }
        ysh.push_back(d);
      }
      if (neg >= 0) {
        if (total % known_prod) return fail("cannot infer -1");
        ysh[size_t(neg)] = total / known_prod;
      } else if (known_prod != total) {
        return fail("element count changes");
      }
    }
    // Row-major on both sides: the input in ONNX order (moved there when it
    // is NHWC and the order differs), the output in ONNX order too, or NHWC
    // where that is the same order (so images stay NHWC for what follows).
    if (b.in_seg(y)) return fail("output defined twice");
    reshape_into(b, x, ysh, y, n.name);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.op == "QLinearConcat" && n.domain == "com.microsoft") {
    const std::string w = map_concat(b, n);
    if (!w.empty()) return fail(w);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.domain.empty() &&
      (n.op == "Slice" || n.op == "Split" || n.op == "Gather" || n.op == "Squeeze" || n.op == "Unsqueeze")) {
    if (!b.adopt(n.in(0))) return fail("");  // float, or of unknown quantization: host_reason says which
    const std::string w = map_select(b, n);
    return w.empty() ? true : fail(w);
  }
  if (n.op == "Transpose" && n.domain.empty()) {
    // A layout transform: a DMA gather on the device (compiler/lower.cc), or
    // nothing where a later transpose or matmul reads the data in its
    // original order (SegBuilder::permute_into).
    const std::string x = n.in(0), y = n.outputs[0];
    if (!b.adopt(x)) return fail("a transpose of a tensor of unknown quantization is left to the host");
    const auto xsh = b.onnx_shape[x];
    const size_t r = xsh.size();
    Perm perm = n.get_ints("perm", {});
    if (perm.empty()) {  // ONNX default: the dims reversed
      perm = identity(r);
      std::reverse(perm.begin(), perm.end());
    }
    if (perm.size() != r) return fail("perm does not match the rank");
    std::vector<bool> seen(r, false);
    for (auto d : perm) {
      if (d < 0 || d >= int64_t(r) || seen[size_t(d)]) return fail("perm is not a permutation");
      seen[size_t(d)] = true;
    }
    if (b.in_seg(y)) return fail("output defined twice");
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
      b.seg.nodes.push_back(n.name);
      return true;
    }
    b.declare(y, ysh, b.onnx_type[x], b.seg.graph.tensors[x].q, identity(r));
    // Device dim i of y is ONNX dim perm[i] of x, device dim inv(layout x)[perm[i]] of x.
    const Perm inv = inverse(b.layout.at(x));
    Perm p;
    for (auto d : perm) p.push_back(inv[size_t(d)]);
    b.permute_into(x, p, y, n.name);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  if (n.op == "MaxPool" && n.domain.empty()) {
    const std::string x = n.in(0);
    const int32_t xt = b.type_of(x);
    if (xt != kInt8 && xt != kUint8) return fail("float MaxPool runs on the host");
    if (n.outputs.size() > 1) return fail("Indices output");
    auto xsh = b.shape_of(x);
    if (xsh.size() != 4) return fail("only 2-D pooling runs on the fabric");
    auto k = n.get_ints("kernel_shape");
    auto st = n.get_ints("strides", {1, 1});
    auto pads = n.get_ints("pads", {0, 0, 0, 0});
    for (auto d : n.get_ints("dilations", {1, 1}))
      if (d != 1) return fail("dilations other than 1");
    if (n.get_s("auto_pad", "NOTSET") != "NOTSET" || n.get_i("storage_order", 0)) return fail("auto_pad/storage_order");
    if (k.size() != 2 || st.size() != 2 || pads.size() != 4) return fail("not 2-D");
    if (n.get_i("ceil_mode", 0)) {
      // The last window may start past the floor's last one: that many more
      // rows/columns of bottom/right padding (-128, never a window's max:
      // every window keeps a real element), to the output size shape
      // inference gave (ONNX Runtime's own).
      const auto ysh = b.shape_of(n.outputs[0]);
      if (ysh.size() != 4) return fail("ceil_mode without an inferred output shape");
      for (size_t a = 0; a < 2; ++a) {
        const int64_t need = (ysh[2 + a] - 1) * st[a] + k[a] - (xsh[2 + a] + pads[a] + pads[a + 2]);
        if ((ysh[2 + a] - 1) * st[a] >= xsh[2 + a] + pads[a])
          return fail("ceil_mode with a window in the padding only");
        pads[a + 2] += std::max<int64_t>(need, 0);
      }
    }
    if (pads[0] >= k[0] || pads[2] >= k[0] || pads[1] >= k[1] || pads[3] >= k[1]) return fail("padding not smaller than the kernel");
    double scale = 1.0;
    int64_t zp = 0;
    if (b.in_seg(x)) {
      scale = b.seg.graph.tensors[x].q.scale[0];
      zp = b.seg.graph.tensors[x].q.zero_point + (xt == kUint8 ? 128 : 0);
    }
    bool fresh = false;
    if (!b.activation(x, scale, zp, &fresh)) return fail("input has no static shape");
    new_input(x, fresh);
    const int64_t oh = (xsh[2] + pads[0] + pads[2] - k[0]) / st[0] + 1, ow = (xsh[3] + pads[1] + pads[3] - k[1]) / st[1] + 1;
    const std::vector<int64_t> ysh{xsh[0], xsh[1], oh, ow};
    const std::string y = n.outputs[0];
    if (b.in_seg(y)) return fail("output defined twice");
    b.declare(y, ysh, xt, b.seg.graph.tensors[x].q, default_layout(4));
    ir::Node nd;
    nd.name = n.name;
    nd.op = ir::OpKind::MaxPool;
    nd.inputs = {b.view(x, default_layout(4), n.name + "/x")};
    nd.outputs = {y};
    nd.attrs.kernel_h = k[0], nd.attrs.kernel_w = k[1], nd.attrs.stride_h = st[0], nd.attrs.stride_w = st[1];
    nd.attrs.pad_top = pads[0], nd.attrs.pad_left = pads[1], nd.attrs.pad_bottom = pads[2], nd.attrs.pad_right = pads[3];
    b.seg.graph.nodes.push_back(nd);
    b.seg.nodes.push_back(n.name);
    return true;
  }
  *why = "";
  return false;
}

/// Why `n`, which no device form matched, runs on the host: a float op the
/// quantizer left out, a quantized op whose QDQ group did not fold (and
/// why), a quantization boundary, or an integer op the fabric lacks.
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

/// The segment `b` built from model nodes `nodes`: its boundary outputs
/// (produced here, read by other nodes or the graph), boundary layouts and
/// name. Not yet validated or compiled.
Segment finish_segment(SegBuilder& b, const std::vector<size_t>& nodes, size_t index) {
  const Model& m = b.m;
  Segment seg = std::move(b.seg);
  // Boundary outputs: produced here, needed by later nodes or the graph.
  std::set<std::string> needed(m.outputs.begin(), m.outputs.end());
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    if (std::find(nodes.begin(), nodes.end(), k) != nodes.end()) continue;
    for (const auto& i : m.nodes[k].inputs) needed.insert(i);
  }
  for (const auto& nd : seg.graph.nodes)
    if (needed.count(nd.outputs[0])) seg.graph.outputs.push_back(nd.outputs[0]);
  // Device nodes nothing reads (a transpose that a later view looked
  // through) are dropped, with their tensors.
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> read(seg.graph.outputs.begin(), seg.graph.outputs.end());
    for (const auto& nd : seg.graph.nodes) read.insert(nd.inputs.begin(), nd.inputs.end());
    for (size_t k = seg.graph.nodes.size(); k-- > 0;) {
      if (read.count(seg.graph.nodes[k].outputs[0])) continue;
      seg.graph.tensors.erase(seg.graph.nodes[k].outputs[0]);
      seg.graph.nodes.erase(seg.graph.nodes.begin() + std::ptrdiff_t(k));
      changed = true;
    }
  }
  const Perm nhwc = default_layout(4);
  for (const auto& t : seg.graph.inputs) {
    seg.nhwc[t] = b.layout[t] == nhwc;
    seg.u8[t] = b.onnx_type[t] == kUint8;
  }
  for (const auto& t : seg.graph.outputs) {
    seg.nhwc[t] = b.layout[t] == nhwc;
    seg.u8[t] = b.onnx_type[t] == kUint8;
  }
  seg.graph.name = m.name.empty() ? "onnx" : m.name;
  seg.graph.name += "/segment" + std::to_string(index);
  seg.graph.source = m.path;
  return seg;
}

}  // namespace

Expected<Program> build_program(Model model, const std::map<std::string, Value>& bound, const spec::HwConfig& cfg,
                                const ProgramOptions& opt) {
  Program p;
  p.model = std::move(model);
  Model& m = p.model;
  Known known = [&](const std::string& t) -> const Value* {
    if (auto it = m.consts.find(t); it != m.consts.end()) return &it->second;
    if (auto it = bound.find(t); it != bound.end()) return &it->second;
    return nullptr;
  };
  if (!m.import_note.empty()) p.notes.push_back(m.import_note);
  std::map<std::string, std::string> unfolded;
  if (opt.use_device) p.folded_qdq = fold_qdq(m, known, opt.compile.exact_host, &unfolded);
  {
    int rows = 0, exact = 0;
    for (const auto& n : m.nodes) {
      rows += n.domain == "loom" && (n.op == "QLinearSoftmax" || n.op == "QLinearLayerNorm");
      exact += n.domain.empty() && (n.op == "Softmax" || n.op == "LayerNormalization");
    }
    if (rows)
      p.notes.push_back(std::to_string(rows) + " Softmax/LayerNormalization ops run as integer row normalizations "
                        "(ROWNORM: approximations, bit-exact across backends; --exact-host keeps them on the host in float)");
    if (exact && opt.compile.exact_host)
      p.notes.push_back(std::to_string(exact) + " Softmax/LayerNormalization ops run on the host in float (--exact-host)");
  }

  // Every op must run somewhere.
  std::set<std::string> consumed_later;
  for (const auto& n : m.nodes) {
    std::string why;
    if (!host_supports(n, m.opset, &why)) {
      // Device-only forms are mapped below; anything else is an error now.
      return make_error(m.where(n), "op " + (n.domain.empty() ? n.op : n.domain + "." + n.op) +
                                        " is supported neither by the fabric nor by the host fallback (" + why + ")");
    }
  }

  std::vector<bool> on_device(m.nodes.size(), false);
  std::vector<int> seg_of(m.nodes.size(), -1);
  std::vector<std::string> host_why(m.nodes.size(), opt.use_device ? "" : "the device is not used for this run");
  const Uses uses = uses_of(m);
  if (opt.use_device) {
    std::unique_ptr<SegBuilder> cur;
    std::vector<size_t> cur_nodes;
    auto close = [&]() -> Status {
      if (!cur || cur_nodes.empty()) {
        cur.reset();
        cur_nodes.clear();
        return {};
      }
      Segment seg = finish_segment(*cur, cur_nodes, p.segments.size());
      std::string why;
      Status s = ir::validate(seg.graph);
      if (s) {
        const compiler::CompileOptions& co = opt.compile;
        auto r = compiler::compile(seg.graph, cfg, co);
        if (!r && (co.placement != compiler::Placement::Static || co.hls != compiler::Hls::Off ||
                   co.tasks_per_core != 1)) {
          // Only the options stand in the way: say so rather than moving the
          // segment to the host.
          compiler::CompileOptions def;
          def.num_cores = co.num_cores;
          def.fusion = co.fusion;
          def.cost_params = co.cost_params;
          if (compiler::compile(seg.graph, cfg, def))
            return make_error("segment " + std::to_string(p.segments.size()) + " (from '" +
                                  m.nodes[cur_nodes[0]].name + "')",
                              "compiles with the default placement and --hls off but not with --placement " +
                                  std::string(compiler::placement_name(co.placement)) + " --hls " +
                                  compiler::hls_name(co.hls) + ": " + r.error().str());
        }
        if (r) {
          plan::Segment ps;
          ps.plan = std::move(r->plan);
          ps.plan.graph_source = m.path;
          for (const auto& b : ps.plan.inputs) ps.inputs.push_back(b.name);
          for (const auto& b : ps.plan.outputs) ps.outputs.push_back(b.name);
          seg.decisions = std::move(r->decisions);
          const int idx = int(p.segments.size());
          for (size_t k : cur_nodes) on_device[k] = true, seg_of[k] = idx;
          p.program.segments.push_back(std::move(ps));
          p.segments.push_back(std::move(seg));
        } else {
          why = r.error().str();
        }
      } else {
        why = s.str();
      }
      if (!why.empty()) {
        p.notes.push_back("segment of " + std::to_string(cur_nodes.size()) + " ops from '" +
                          m.nodes[cur_nodes[0]].name + "' runs on the host: " + why);
        for (size_t k : cur_nodes) host_why[k] = "its segment did not compile for the fabric: " + why;
      }
      cur.reset();
      cur_nodes.clear();
      return {};
    };
    for (size_t k = 0; k < m.nodes.size(); ++k) {
      if (!cur) {
        cur = std::make_unique<SegBuilder>(SegBuilder{m, known, {}, {}, {}, {}});
        cur->param_bytes = uint64_t(cfg.param_kib) * 1024;
      }
      std::string why;
      if (map_device(*cur, m.nodes[k], &why)) {
        cur_nodes.push_back(k);
      } else {
        if (!why.empty()) p.notes.push_back("'" + m.nodes[k].name + "' (" + m.nodes[k].op + ") runs on the host: " + why);
        host_why[k] = why.empty() ? host_reason(m, uses, known, m.nodes[k], unfolded) : why;
        LOOM_TRY(close());
      }
    }
    LOOM_TRY(close());
  }
  p.onnx_nodes = m.nodes.size();
  int last_seg = -1;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    if (on_device[k]) {
      if (seg_of[k] != last_seg) p.program.steps.push_back(plan::Step{seg_of[k], 0});
      last_seg = seg_of[k];
    } else {
      p.program.steps.push_back(plan::Step{-1, k});
      p.fallback_ops.push_back(m.nodes[k].name + " (" + m.nodes[k].op + ")");
      p.host_ops.push_back(HostOp{m.nodes[k].name, m.nodes[k].op, host_why[k]});
      last_seg = -1;
    }
  }
  return p;
}

Expected<std::vector<Segment>> segment_graphs(Model model, const std::vector<std::vector<std::string>>& nodes,
                                              bool exact_host) {
  Model& m = model;
  Known known = [&](const std::string& name) -> const Value* {
    auto it = m.consts.find(name);
    return it != m.consts.end() ? &it->second : nullptr;
  };
  std::map<std::string, std::string> unfolded;
  fold_qdq(m, known, exact_host, &unfolded);
  std::vector<Segment> out;
  size_t at = 0;  // segments are runs of consecutive nodes, in model order
  for (size_t s = 0; s < nodes.size(); ++s) {
    const std::string where = m.path + ": segment " + std::to_string(s);
    SegBuilder b{m, known, {}, {}, {}, {}};
    std::vector<size_t> ks;
    for (const auto& name : nodes[s]) {
      while (at < m.nodes.size() && m.nodes[at].name != name) ++at;
      if (at == m.nodes.size())
        return make_error(where, "node '" + name + "' is not in the model, or not in the order of the segment");
      std::string why;
      if (!map_device(b, m.nodes[at], &why))
        return make_error(where, "node '" + name + "' no longer maps to the fabric" + (why.empty() ? "" : ": " + why));
      ks.push_back(at++);
    }
    Segment seg = finish_segment(b, ks, s);
    if (Status v = ir::validate(seg.graph); !v) return Status(v).context(where).error();
    out.push_back(std::move(seg));
  }
  return out;
}

namespace {

Tensor to_device(const Value& v, bool nhwc, bool u8) {
  std::vector<int64_t> s = v.shape;
  if (nhwc) s = {v.shape[0], v.shape[2], v.shape[3], v.shape[1]};
  Tensor t(DType::I8, s);
  const int64_t off = u8 ? 128 : 0;
  if (!nhwc) {
    for (int64_t k = 0; k < v.numel(); ++k) t.i8()[k] = int8_t(v.i[size_t(k)] - off);
    return t;
  }
  const int64_t N = v.shape[0], C = v.shape[1], H = v.shape[2], W = v.shape[3];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          t.i8()[((n * H + h) * W + w) * C + c] = int8_t(v.i[size_t(((n * C + c) * H + h) * W + w)] - off);
  return t;
}

Value from_device(const Tensor& t, bool nhwc, bool u8) {
  std::vector<int64_t> s = t.shape;
  if (nhwc) s = {t.shape[0], t.shape[3], t.shape[1], t.shape[2]};
  Value v = Value::make(u8 ? kUint8 : kInt8, s);
  const int64_t off = u8 ? 128 : 0;
  if (!nhwc) {
    for (int64_t k = 0; k < v.numel(); ++k) v.i[size_t(k)] = int64_t(t.i8()[k]) + off;
    return v;
  }
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          v.i[size_t(((n * C + c) * H + h) * W + w)] = int64_t(t.i8()[((n * H + h) * W + w) * C + c]) + off;
  return v;
}

}  // namespace

Expected<ProgramRun> run_program(const Program& p, const std::string& backend, const spec::HwConfig& cfg,
                                 const std::map<std::string, Value>& inputs, bool check) {
  auto dev = runtime::make_device(backend, cfg);
  if (!dev) return dev.error();
  return run_program(p, **dev, inputs, check);
}

Expected<std::map<std::string, Value>> random_inputs(const Model& m, uint64_t seed) {
  std::map<std::string, Value> in;
  for (size_t k = 0; k < m.inputs.size(); ++k) {
    const std::string& name = m.inputs[k];
    auto it = m.types.find(name);
    if (it == m.types.end() || it->second.type == 0 || !it->second.has_shape)
      return make_error(m.path + ": graph input '" + name + "'", "has no known type and fixed shape for random inputs; give it with --inputs");
    for (int64_t d : it->second.shape)
      if (d < 1)
        return make_error(m.path + ": graph input '" + name + "'",
                          "has a dynamic shape " + shape_str(it->second.shape) + "; give it with --inputs");
    LOOM_TRY(check_dims(it->second.shape, m.path + ": graph input '" + name + "'"));
    const int32_t t = it->second.type;
    if (!elem_supported(t))
      return make_error(m.path + ": graph input '" + name + "'", "has element type " + elem_name(t) + ", which loom does not handle");
    Value v = Value::make(t, it->second.shape);
    ir::detail::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull + k + 1);
    for (int64_t e = 0; e < v.numel(); ++e) {
      if (t == kFloat) {
        v.f[size_t(e)] = float(double(rng.next() >> 11) * 0x1p-53 * 2.0 - 1.0);
      } else if (t == kBool) {
        v.i[size_t(e)] = int64_t(rng.next() & 1);
      } else if (t == kInt8 || t == kUint8) {
        int64_t lo = 0, hi = 0;
        elem_range(t, &lo, &hi);
        v.i[size_t(e)] = rng.in_range(lo, hi);
      } else {
        v.i[size_t(e)] = rng.in_range(0, 15);
      }
    }
    in[name] = std::move(v);
  }
  return in;
}

Expected<std::unique_ptr<ProgramValues>> ProgramValues::bind(const Program& p,
                                                             const std::map<std::string, Value>& inputs, bool check) {
  const Model& m = p.model;
  if (p.segments.size() != p.program.segments.size())
    return make_error(m.path, "the program has " + std::to_string(p.program.segments.size()) + " device segments but " +
                                  std::to_string(p.segments.size()) + " segment layouts");
  LOOM_TRY(plan::validate(p.program, m.path));
  std::map<std::string, Value> env = m.consts;
  for (const auto& name : m.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) return make_error(m.path, "no value given for graph input '" + name + "'");
    const Value& v = it->second;
    auto ti = m.types.find(name);
    if (ti != m.types.end()) {
      if (ti->second.type && ti->second.type != v.type)
        return make_error(m.path + ": graph input '" + name + "'", "expects " + elem_name(ti->second.type) + ", got " + elem_name(v.type));
      if (ti->second.has_shape && ti->second.shape != v.shape)
        return make_error(m.path + ": graph input '" + name + "'", "expects shape " + shape_str(ti->second.shape) + ", got " + shape_str(v.shape));
    }
    env[name] = v;
  }
  return std::unique_ptr<ProgramValues>(new ProgramValues(p, std::move(env), check));
}

Status ProgramValues::run_host(size_t index) {
  const Model& m = p_.model;
  if (index >= m.nodes.size())
    return make_error(m.path + ": host step " + std::to_string(index), "names no node of the model");
  return onnxfe::run_host(m, m.nodes[index], env_);
}

Expected<Tensor> ProgramValues::to_device(int segment, const plan::TensorBinding& b) {
  const Model& m = p_.model;
  const Segment& seg = p_.segments.at(size_t(segment));
  auto vit = env_.find(b.name);
  if (vit == env_.end() || !seg.nhwc.count(b.name) || !seg.u8.count(b.name))
    return make_error(m.path + ": segment " + std::to_string(segment) + " input '" + b.name + "'", "has no value");
  const Value& v = vit->second;
  const bool nhwc = seg.nhwc.at(b.name), u8 = seg.u8.at(b.name);
  // The segment was compiled for this type and shape: anything else at run
  // time is refused before a byte is converted.
  std::vector<int64_t> want = b.shape;
  if (nhwc) want = {b.shape[0], b.shape[3], b.shape[1], b.shape[2]};
  if (v.type != (u8 ? kUint8 : kInt8) || v.shape != want)
    return make_error(m.path + ": tensor '" + b.name + "'", "is " + elem_name(v.type) + " " + shape_str(v.shape) +
                                                               " at run time; the segment was compiled for " +
                                                               elem_name(u8 ? kUint8 : kInt8) + " " + shape_str(want));
  return onnxfe::to_device(v, nhwc, u8);
}

Status ProgramValues::from_device(int segment, const plan::TensorBinding& b, Tensor t) {
  const Segment& seg = p_.segments.at(size_t(segment));
  if (!seg.nhwc.count(b.name) || !seg.u8.count(b.name))
    return make_error(p_.model.path + ": segment " + std::to_string(segment) + " output '" + b.name + "'",
                      "is no boundary tensor of the segment");
  env_[b.name] = onnxfe::from_device(t, seg.nhwc.at(b.name), seg.u8.at(b.name));
  return {};
}

Status ProgramValues::segment_ran(int segment, const std::map<std::string, Tensor>& in, const runtime::RunResult& r) {
  if (!check_) return {};
  const Segment& seg = p_.segments.at(size_t(segment));
  if (seg.graph.nodes.empty()) return make_error("segment " + std::to_string(segment), "has no graph to check against");
  // The device against loom's direct reference of the same segment.
  auto ref = ir::run_reference(seg.graph, in);
  if (!ref) return ref.error();
  for (const auto& [name, t] : r.outputs) {
    auto it = ref->find(name);
    int64_t diff = 0;
    if (it == ref->end() || it->second.shape != t.shape) {
      diff = t.numel();
    } else {
      for (int64_t k = 0; k < t.numel(); ++k) diff += t.i8()[k] != it->second.i8()[k];
    }
    if (diff) mismatches_.emplace_back("segment " + std::to_string(segment) + " output '" + name + "'", diff);
  }
  return {};
}

Expected<std::vector<std::pair<std::string, Value>>> ProgramValues::outputs() const {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& o : p_.model.outputs) {
    auto it = env_.find(o);
    if (it == env_.end()) return make_error(p_.model.path + ": graph output '" + o + "'", "was not computed");
    out.emplace_back(o, it->second);
  }
  return out;
}

Expected<ProgramRun> run_program(const Program& p, runtime::Device& dev, const std::map<std::string, Value>& inputs,
                                 bool check, const runtime::RunOptions& ro) {
  auto host = ProgramValues::bind(p, inputs, check);
  if (!host) return host.error();
  auto dr = runtime::run_program(dev, p.program, **host, ro);
  if (!dr) return dr.error();
  auto outs = (*host)->outputs();
  if (!outs) return outs.error();
  ProgramRun run;
  run.outputs = std::move(*outs);
  run.device = std::move(*dr);
  run.mismatches = (*host)->mismatches();
  return run;
}

}  // namespace loom::onnxfe
