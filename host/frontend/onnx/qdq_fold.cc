// QDQ folding: each pattern one function, fold_qdq the pass over them.
#include "frontend/onnx/qdq_fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "common/quant.h"
#include "common/rownorm.h"
#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/resize_taps.h"

namespace loom::onnxfe {

bool scalar_int_equal(const Value& v) {
  for (auto x : v.i)
    if (x != v.i[0]) return false;
  return !v.i.empty();
}

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

namespace {

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
    if (!drop.count(k))
      kept.push_back(std::move(m.nodes[k]));
    else if (at.count(k))
      kept.push_back(std::move(at.at(k)));
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
          if (!c)
            ran = false;
          else
            env[i] = *c;
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
/// tensor x (x itself, or a lookup of x: SiLU as ONNX Runtime
/// quantizes it, x * sigmoid(x) with a QuantizeLinear between), or a lookup
/// of x and a quantized scalar constant (GELU's `1 + erf` and `* 0.5`, whose
/// constants ONNX Runtime quantizes as activations), is itself a function of
/// x: one lookup whose table is the ops run on every value of x with the host
/// ops (one pass instead of two, rounded as the host rounds: in float32 as
/// ONNX Runtime, which decides the sums that fall on a half). A lookup that
/// is also read elsewhere, or is a graph output, stays for those readers, so
/// the op computes the same values whatever else is observed.
int fold_lookup_pairs(Model& m, const Known& known) {
  Uses u = uses_of(m);
  std::set<size_t> drop;
  int folded = 0;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    Node& n = m.nodes[k];
    if (n.domain != "com.microsoft" || (n.op != "QLinearAdd" && n.op != "QLinearMul") || n.inputs.size() < 8) continue;
    // Operand i: the lookup producing it, and its base tensor; a scalar
    // constant operand takes the other's base.
    const Node* look[2] = {nullptr, nullptr};
    std::string base[2];
    bool constant[2] = {false, false};
    bool sole[2] = {false, false};  // the lookup is read here only (it goes with the fold)
    for (int i = 0; i < 2; ++i) {
      const std::string& t = n.in(size_t(3 * i));
      base[i] = t;
      const Value* c = known(t);
      constant[i] = c && c->numel() == 1 && !c->is_float();
      if (c) continue;
      auto p = u.producer.find(t);
      if (p == u.producer.end()) continue;
      const Node& l = m.nodes[p->second];
      if (l.op == "QLinearLookup" && l.domain == "loom" && !drop.count(p->second)) {
        look[i] = &l;
        base[i] = l.in(0);
        sole[i] = u.consumers.at(t).size() == 1 && std::find(m.outputs.begin(), m.outputs.end(), t) == m.outputs.end();
      }
    }
    if (constant[0] != constant[1]) {
      const int v = constant[0] ? 1 : 0;  // the variable operand, which must be a lookup
      if (!look[v]) continue;
      base[1 - v] = base[v];
    }
    if (base[0] != base[1] || known(base[0]) || (!look[0] && !look[1])) continue;
    // x's scale and zero point: the operand that is x itself, else a lookup's input's.
    const int direct = !constant[0] && !look[0] ? 0 : !constant[1] && !look[1] ? 1 : -1;
    const Node* lk = look[0] ? look[0] : look[1];
    const std::string xs_name = direct >= 0 ? n.in(size_t(3 * direct + 1)) : lk->in(1);
    const std::string xz_name = direct >= 0 ? n.in(size_t(3 * direct + 2)) : lk->in(2);
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
    m.consts[table].shape = {256};  // a scalar constant may broadcast x's values to a higher rank
    f.inputs = {base[0], xs_name, xz_name, table, n.in(6), n.in(7)};
    f.outputs = n.outputs;
    for (int i = 0; i < 2; ++i)
      if (look[i] && sole[i]) drop.insert(size_t(look[i] - m.nodes.data()));
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
    for (size_t o = 1; o < n->outputs.size(); ++o)
      extra = extra || (!n->outputs[o].empty() && u.consumers.count(n->outputs[o]));
    if (extra || n->outputs.empty()) continue;
    if (ln) {
      const Value *g = known(n->in(1)), *b = n->in(2).empty() ? nullptr : known(n->in(2));
      if (!g || !g->is_float() || (!n->in(2).empty() && (!b || !b->is_float() || b->numel() != g->numel()))) continue;
      if (n->get_i("stash_type", 1) != 1) continue;
    }
    const Node* q = sole_consumer(m, u, n->outputs[0]);
    if (!q || q->op != "QuantizeLinear" || !q->domain.empty() || q->in(0) != n->outputs[0] ||
        !per_tensor_8bit(known, *q))
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

/// One BatchNormalization channel as a depthwise 1x1 QLinearConv weight:
/// its int8 magnitude, the int32 bias and the weight's scale.
struct BnChannel {
  int w = 127;
  int64_t bias = 0;
  float ws = 1;
  int misses = 0;  // input values whose output differs from ONNX Runtime's
};

/// The BN's quantized output as ONNX Runtime computes it, in float32: the
/// input dequantized, y = x * a + s with a = g / sqrt(var + eps) and s = b -
/// mean * a in float32, then QuantizeLinear (divide, round half to even,
/// saturate).
struct BnTarget {
  float sx, sy, a, s;
  int zx, zy;
  int in_lo, in_hi, lo, hi;  // the input's and the output's value ranges
  int64_t at(int q) const {
    const float y = float(q - zx) * sx * a + s;
    const float r = std::clamp(std::nearbyint(y / sy), -1e9f, 1e9f);  // inf and NaN stay finite
    return std::clamp<int64_t>(int64_t(r) + zy, lo, hi);
  }
};

/// The (magnitude, bias) pairs a BN may try with a free weight scale.
constexpr int64_t kBnScaleTries = int64_t(1) << 16;

/// Input values (t.in_lo..t.in_hi, stopping at `cap`) where the kernel with
/// weight `w` (signed), bias `b` and weight scale `ws` misses ONNX Runtime's
/// output; `cap` + 1 when the scale has no multiplier.
int bn_misses(int w, int64_t b, float ws, const BnTarget& t, int cap) {
  Multiplier m;
  if (!quantize_multiplier(double(t.sx) * double(ws) / double(t.sy), &m)) return cap + 1;
  int misses = 0;
  for (int q = t.in_lo; q <= t.in_hi && misses < cap; ++q) {
    const int64_t acc = int64_t(w) * (q - t.zx) + b;
    misses += std::clamp<int64_t>(int64_t(requantize(acc, m.mult, m.shift)) + t.zy, t.lo, t.hi) != t.at(q);
  }
  return misses;
}

/// The multipliers (at `shift`) for which the kernel acc = w (q - zx) + b,
/// rounded as rq(acc, mult, shift), gives every target output: each input
/// value bounds mult from one side or both (an output clamped at lo or hi
/// only from one). Bounds in double, so an end may be one off; callers
/// verify exactly. nullopt when the bounds cross.
std::optional<std::pair<int64_t, int64_t>> bn_mult_range(int w, int64_t b, int shift, const BnTarget& t) {
  double lo = std::ldexp(1.0, 30), hi = std::ldexp(1.0, 31) - 1;
  for (int q = t.in_lo; q <= t.in_hi; ++q) {
    const int64_t y = t.at(q), acc = int64_t(w) * (q - t.zx) + b;
    // The rounded value r = rq(acc, mult, shift) must lie in [rlo, rhi].
    const double rlo = y == t.lo ? -1e30 : double(y - t.zy), rhi = y == t.hi ? 1e30 : double(y - t.zy);
    if (acc == 0) {
      if (rlo > 0 || rhi < 0) return std::nullopt;
      continue;
    }
    // acc * mult / 2^shift in [rlo - 1/2, rhi + 1/2), mirrored for acc < 0.
    const double a = double(acc), l = std::ldexp(rlo - 0.5, shift) / a, h = std::ldexp(rhi + 0.5, shift) / a;
    lo = std::max(lo, std::ceil(std::min(l, h)));
    hi = std::min(hi, std::ceil(std::max(l, h)) - 1);
    if (lo > hi) return std::nullopt;
  }
  return std::make_pair(int64_t(lo), int64_t(hi));
}

/// A float32 weight scale whose multiplier sx ws / sy lands in [lo, hi] at
/// `shift`: the float nearest the middle, then its neighbours in turn.
std::optional<float> bn_scale_for(int64_t lo, int64_t hi, int shift, const BnTarget& t) {
  const float mid = float(std::ldexp(double(lo + hi) / 2, -shift) * double(t.sy) / double(t.sx));
  if (!(mid > 0) || !std::isfinite(mid)) return std::nullopt;
  float up = mid, down = mid;
  for (int k = 0; k < 64; ++k) {
    for (float ws : {up, down}) {
      Multiplier m;
      if (quantize_multiplier(double(t.sx) * double(ws) / double(t.sy), &m) && m.shift == shift && m.mult >= lo &&
          m.mult <= hi)
        return ws;
    }
    up = std::nextafter(up, 1e30f), down = std::nextafter(down, 0.0f);
  }
  return std::nullopt;
}

/// The weight of one BN channel whose integer kernel gives ONNX Runtime's
/// output on every input value (t.in_lo..t.in_hi). First the plain choices:
/// magnitudes 127 down to 96, the scale |a| / w and the biases next to the
/// ideal one. A weight of 127 alone rounds the shift onto the accumulator
/// grid x_scale |a| / 127 and misses where the exact value lies within that
/// grid of a rounding boundary; a smaller weight moves the grid. Where all
/// of them miss, the scale is freed as well: for each magnitude (127 down to
/// 1) and bias near the ideal, the multipliers that give every output
/// (bn_mult_range) and a float32 scale that yields one, while `tries` (the
/// BN's budget of such tries, shared by its channels) lasts. The first with
/// no miss, else the plain choice with the fewest. `a` == 0: a zero weight.
BnChannel bn_channel(double a, double s, const BnTarget& t, int64_t& tries) {
  // A bias beyond int32 stays beyond it, and converts without overflow.
  const auto bias_of = [](double v) { return int64_t(std::clamp(std::nearbyint(v), -4e9, 4e9)); };
  const int sign = a > 0 ? 1 : -1;
  BnChannel best;
  best.misses = 1 << 30;
  if (a == 0) return BnChannel{0, bias_of(s / double(t.sx)), 1.0f, 0};
  for (int w = 127; w >= 96 && best.misses > 0; --w) {
    const float ws = float(std::fabs(a) / w);
    const double ideal = s / (double(t.sx) * double(ws));
    if (!(std::fabs(ideal) < 2147483000.0)) break;
    for (int64_t b : {int64_t(std::nearbyint(ideal)), int64_t(std::floor(ideal)), int64_t(std::ceil(ideal))}) {
      const int misses = bn_misses(sign * w, b, ws, t, best.misses);
      if (misses < best.misses) best = BnChannel{w, b, ws, misses};
      if (misses == 0) break;
    }
  }
  for (int w = 127; w >= 1 && best.misses > 0 && tries > 0; --w) {
    const float ws = float(std::fabs(a) / w);
    Multiplier m;
    if (!quantize_multiplier(double(t.sx) * double(ws) / double(t.sy), &m)) break;
    const double ideal = s / (double(t.sx) * double(ws));
    if (!(std::fabs(ideal) < 2147483000.0)) break;
    for (int d = 0; d <= 10 && best.misses > 0 && tries-- > 0; ++d) {
      const int64_t b = int64_t(std::nearbyint(ideal)) + (d % 2 ? (d + 1) / 2 : -d / 2);
      const auto range = bn_mult_range(sign * w, b, m.shift, t);
      const auto fit = range ? bn_scale_for(range->first, range->second, m.shift, t) : std::nullopt;
      if (fit && bn_misses(sign * w, b, *fit, t, 1) == 0) best = BnChannel{w, b, *fit, 0};
    }
  }
  if (best.misses == 1 << 30) {  // no weight representable: the plain rounding
    const float ws = float(std::fabs(a) / 127.0);
    best = BnChannel{127, bias_of(s / (double(t.sx) * double(ws))), ws, 0};
  }
  return best;
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
    if (!param(n.in(k)))
      return "its " +
             std::string(k == 1   ? "scale"
                         : k == 2 ? "bias"
                         : k == 3 ? "mean"
                                  : "variance") +
             " '" + n.in(k) + "' is not a constant";
  for (const Value* v : {g, bb, mean, var})
    if (!v->is_float() || v->numel() != C) return "its parameters are not float32 with one value a channel";
  const float eps = n.get_f("epsilon", 1e-5f);
  const Value *yz = known(q.in(2)), *xz = known(d.in(2)), *ys = known(q.in(1));
  if (!ys || !ys->is_float() || ys->numel() != 1) return "its output scale is not one constant";
  BnTarget bt{known(d.in(1))->f[0],   ys->f[0], 0,   0,    xz ? int(xz->i[0]) : 0,
              yz ? int(yz->i[0]) : 0, -128,     127, -128, 127};
  if (xz && xz->type == kUint8) bt.in_lo = 0, bt.in_hi = 255;
  if (yz && yz->type == kUint8) bt.lo = 0, bt.hi = 255;
  Value w = Value::make(kInt8, {C, 1, 1, 1}), ws = Value::make(kFloat, {C}), bias = Value::make(kInt32, {C});
  // Freeing the weight scale costs up to 127 x 11 tries of 256 values for a
  // channel that no choice fits: a budget per BN keeps a hostile model's
  // import bounded (DenseNet-121 compares with ONNX Runtime the same with it
  // as without).
  int64_t tries = kBnScaleTries;
  for (int64_t c = 0; c < C; ++c) {
    const size_t k = size_t(c);
    bt.a = 1.0f / std::sqrt(var->f[k] + eps) * g->f[k];  // float32, as ONNX Runtime's kernel
    bt.s = bb->f[k] - mean->f[k] * bt.a;
    const double a = bt.a, s = bt.s;
    if (!std::isfinite(a) || !std::isfinite(s)) return "its factor or shift is not finite";
    const BnChannel ch = bn_channel(a, s, bt, tries);
    if (std::fabs(double(ch.bias)) > 2147483647.0) return "its shift is beyond an int32 bias at this scale";
    w.i[k] = a > 0 ? ch.w : a < 0 ? -ch.w : 0;
    ws.f[k] = ch.ws;
    bias.i[k] = ch.bias;
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

}  // namespace

namespace {

/// One pass of the op-by-op folds over a model's nodes: each pattern is a
/// method that rewrites node `n` in place and marks the Q/DQ nodes it
/// absorbed for removal (true), or leaves `n` as it is, with the reason in
/// `unfolded` where the node looked quantized (false).
class QdqFolder {
 public:
  QdqFolder(Model& m, const Known& known, bool exact_host, std::map<std::string, std::string>* unfolded)
      : m(m), known(known), exact_host(exact_host), u(uses_of(m)), unfolded(unfolded) {}

  /// Folds every node it can, then removes what the folds absorbed; returns
  /// how many nodes it folded.
  int run();

 private:
  /// Split with each part quantized as the whole: Split on the integers.
  bool fold_split(Node& n);
  /// Concat: com.microsoft.QLinearConcat, each input requantized.
  bool fold_concat(Node& n);
  /// A Resize that requantizes (linear, or nearest between differing
  /// Q/DQ parameters) by whole factors: loom.QLinearResize
  /// (resize_taps.h); a nearest one between equal parameters: fold_moving.
  bool fold_resize(Node& n);
  /// AveragePool, ReduceMean and BatchNormalization (fold_channel_op).
  bool fold_channel(Node& n);
  /// Ops that only move or select values, and GlobalAveragePool.
  bool fold_moving(Node& n);
  /// Conv, MatMul, Gemm, Add and Mul into their QLinear forms.
  bool fold_compute(Node& n);
  /// The int32 bias of a QLinearConv/QLinearMatMul `f` folded from `n`.
  bool quantized_bias(const Node& n, bool conv, const Node* d0, const Value* w, const Value* ws, Node* f);
  /// Removes the absorbed Q nodes, then the DequantizeLinear nodes that
  /// now feed nothing.
  void remove_dropped();

  /// Whether `n` only moves or selects values (exact on the integers when
  /// its input and output quantization are equal).
  bool moves_values(const Node& n) const;
  /// The DequantizeLinear with constant parameters producing `t`, or null.
  const Node* dq_of(const std::string& t) const;
  /// The QuantizeLinear with constant per-tensor parameters that alone reads `t`, or null.
  const Node* sole_q(const std::string& t) const;
  bool scalar(const Node* d) const { return per_tensor_8bit(known, *d); }
  /// Q's parameters equal DQ's: a value-moving op between them is exact on the integers.
  bool same_q(const Node* d, const Node* q) const;

  Model& m;
  const Known& known;
  bool exact_host;  // linear Resize stays float (ONNX Runtime's float32 rounding)
  Uses u;
  std::map<std::string, std::string>* unfolded;
  std::set<size_t> drop;  // node indices absorbed by a fold
};

int QdqFolder::run() {
  int folded = 0;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    Node& n = m.nodes[k];
    if (!n.domain.empty()) continue;
    if (n.op == "Split") {
      folded += fold_split(n);
      continue;
    }
    if (n.outputs.size() != 1) continue;
    if (n.op == "Concat")
      folded += fold_concat(n);
    else if (n.op == "Resize")
      folded += fold_resize(n);
    else if (n.op == "AveragePool" || n.op == "ReduceMean" || n.op == "BatchNormalization")
      folded += fold_channel(n);
    else if (moves_values(n) || n.op == "GlobalAveragePool")
      folded += fold_moving(n);
    else
      folded += fold_compute(n);
  }
  remove_dropped();
  return folded;
}

const Node* QdqFolder::dq_of(const std::string& t) const {
  auto it = u.producer.find(t);
  if (it == u.producer.end()) return nullptr;
  const Node& d = m.nodes[it->second];
  if (d.op != "DequantizeLinear" || !d.domain.empty() || d.inputs.size() < 3 || d.in(2).empty()) return nullptr;
  if (!known(d.in(1)) || !known(d.in(2))) return nullptr;
  return &d;
}

const Node* QdqFolder::sole_q(const std::string& t) const {
  const Node* c = sole_consumer(m, u, t);
  if (!c) return nullptr;
  const Node& q = *c;
  if (q.op != "QuantizeLinear" || !q.domain.empty() || q.in(2).empty()) return nullptr;
  const Value* s = known(q.in(1));
  const Value* z = known(q.in(2));
  if (!s || !z || s->numel() != 1 || z->numel() != 1) return nullptr;
  return &q;
}

bool QdqFolder::same_q(const Node* d, const Node* q) const {
  const Value *ds = known(d->in(1)), *dz = known(d->in(2)), *qs = known(q->in(1)), *qz = known(q->in(2));
  return dz->type == qz->type && ds->f[0] == qs->f[0] && dz->i[0] == qz->i[0];
}

bool QdqFolder::moves_values(const Node& n) const {
  return n.op == "MaxPool" || n.op == "Flatten" || n.op == "Reshape" || n.op == "Transpose" || n.op == "Slice" ||
         n.op == "Squeeze" || n.op == "Unsqueeze" || (n.op == "Gather" && known(n.in(1))) ||
         (n.op == "Resize" && n.get_s("mode", "nearest") == "nearest");
}

bool QdqFolder::fold_split(Node& n) {
  // Each part quantized as the whole: Split on the integers.
  const Node* d0 = dq_of(n.in(0));
  if (!d0 || !scalar(d0)) return false;
  std::vector<const Node*> qs;
  for (const auto& o : n.outputs) {
    const Node* q = o.empty() ? nullptr : sole_q(o);
    if (!q || !same_q(d0, q)) break;
    qs.push_back(q);
  }
  if (qs.size() != n.outputs.size()) {
    (*unfolded)[n.name] = "its parts are not each quantized as its input";
    return false;
  }
  n.inputs[0] = d0->in(0);
  for (size_t o = 0; o < qs.size(); ++o) {
    drop.insert(u.consumers[n.outputs[o]][0]);
    n.outputs[o] = qs[o]->outputs[0];
  }
  return true;
}

bool QdqFolder::fold_concat(Node& n) {
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
    return false;
  }
  drop.insert(u.consumers[n.outputs[0]][0]);
  n = f;
  return true;
}

bool QdqFolder::fold_resize(Node& n) {
  // loom.QLinearResize (X, X_scale, X_zp, Y_scale, Y_zp, roi, scales,
  // sizes) with the opset-11 attributes: integer taps, rounded once.
  const Node* d0 = dq_of(n.in(0));
  const Node* q = sole_q(n.outputs[0]);
  if (!d0 || !q || !scalar(d0) || known(d0->in(2))->type != known(q->in(2))->type) return false;
  if (n.get_s("mode", "nearest") == "nearest" && same_q(d0, q)) return fold_moving(n);
  if (exact_host) {
    (*unfolded)[n.name] = "--exact-host keeps a requantizing Resize in float32, as ONNX Runtime rounds it";
    return false;
  }
  const auto t = m.types.find(d0->in(0));
  ResizeTaps taps;
  const std::string why =
      resize_taps(n, int(m.opset), known, t == m.types.end() ? std::vector<int64_t>{} : t->second.shape, &taps);
  if (!why.empty()) {
    (*unfolded)[n.name] = "loom has no integer form of this Resize: " + why +
                          " (it runs in float between DequantizeLinear and QuantizeLinear)";
    return false;
  }
  Node f = n;
  f.op = "QLinearResize";
  f.domain = "loom";
  const bool v10 = m.opset < 11;  // (X, scales), asymmetric coordinates
  f.inputs = {d0->in(0),         d0->in(1), d0->in(2), q->in(1), q->in(2), v10 ? "" : n.in(1), v10 ? n.in(1) : n.in(2),
              v10 ? "" : n.in(3)};
  if (v10) f.attrs["coordinate_transformation_mode"].s = "asymmetric", f.attrs["nearest_mode"].s = "floor";
  f.outputs = q->outputs;
  drop.insert(u.consumers[n.outputs[0]][0]);
  n = f;
  return true;
}

bool QdqFolder::fold_channel(Node& n) {
  const Node* q = sole_q(n.outputs[0]);
  const Node* d0 = dq_of(n.in(0));
  if (!q || !d0 || !scalar(d0) || known(d0->in(2))->type != known(q->in(2))->type) return false;
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
    return false;
  }
  if (q->op.empty()) drop.insert(size_t(q - m.nodes.data()));
  return true;  // fold_channel_op rewrote n and the Q in place
}

bool QdqFolder::fold_moving(Node& n) {
  const bool pass = moves_values(n);
  const Node* q = sole_q(n.outputs[0]);
  const Node* d0 = dq_of(n.in(0));
  if (!q || !d0 || !scalar(d0)) return false;
  const Value *ds = known(d0->in(1)), *dz = known(d0->in(2)), *qs = known(q->in(1)), *qz = known(q->in(2));
  if (dz->type != qz->type) return false;
  Node f = n;
  f.outputs = q->outputs;
  if (pass) {
    if (ds->f[0] != qs->f[0] || dz->i[0] != qz->i[0]) return false;
    f.inputs[0] = d0->in(0);
  } else {
    f.op = "QLinearGlobalAveragePool";
    f.domain = "com.microsoft";
    f.attrs.clear();
    f.inputs = {d0->in(0), d0->in(1), d0->in(2), q->in(1), q->in(2)};
  }
  drop.insert(u.consumers[n.outputs[0]][0]);
  n = f;
  return true;
}

bool QdqFolder::fold_compute(Node& n) {
  const bool gemm = n.op == "Gemm";
  const bool conv = n.op == "Conv", mm = n.op == "MatMul" || gemm, add = n.op == "Add", mul = n.op == "Mul";
  if (!conv && !mm && !add && !mul) return false;
  if (gemm && (n.get_i("transA", 0) != 0 || n.get_f("alpha", 1.0f) != 1.0f || n.get_f("beta", 1.0f) != 1.0f))
    return false;
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
    return false;
  }
  Node f;
  f.name = n.name;
  f.attrs = conv ? n.attrs : std::map<std::string, Attr>{};
  f.outputs = q->outputs;
  if (add || mul) {
    if (!scalar(d1)) {
      skip("input '" + n.in(1) + "' has per-channel quantization");
      return false;
    }
    f.op = add ? "QLinearAdd" : "QLinearMul";
    f.domain = "com.microsoft";
    f.inputs = {d0->in(0), d0->in(1), d0->in(2), d1->in(0), d1->in(1), d1->in(2), q->in(1), q->in(2)};
  } else if (!known(d1->in(0))) {
    // A product of two activations (attention's scores and context).
    if (gemm || conv || !n.in(2).empty() || !scalar(d1)) {
      skip("a product of two activations needs per-tensor quantization, no bias, MatMul");
      return false;
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
      return false;
    }
    f.op = conv ? "QLinearConv" : "QLinearMatMul";
    f.domain = "loom";
    f.inputs = {d0->in(0), d0->in(1), d0->in(2), d1->in(0), d1->in(1), d1->in(2), q->in(1), q->in(2)};
    if (mm && w->shape.size() != 2) {
      skip("its constant operand has rank " + std::to_string(w->shape.size()) + ", not 2");
      return false;
    }
    if (ws->numel() != 1) {
      // Per-channel weight scales must run along the output channels:
      // axis 0 of a Conv weight or of Gemm's transposed B, axis 1 of B.
      int64_t axis = d1->get_i("axis", 1);
      if (axis < 0) axis += int64_t(w->shape.size());
      const bool trans_b = gemm && n.get_i("transB", 0) != 0;
      if (axis != ((conv || trans_b) ? 0 : 1)) {
        skip("per-channel weight scales do not run along the output channels");
        return false;
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
    if (!n.in(2).empty() && !quantized_bias(n, conv, d0, w, ws, &f)) return false;
  }
  drop.insert(u.consumers[n.outputs[0]][0]);
  n = f;
  return true;
}

bool QdqFolder::quantized_bias(const Node& n, bool conv, const Node* d0, const Value* w, const Value* ws, Node* f) {
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
  const Node* bdq =
      bit != u.producer.end() && m.nodes[bit->second].op == "DequantizeLinear" && m.nodes[bit->second].domain.empty()
          ? &m.nodes[bit->second]
          : nullptr;
  Value bdq_real;
  bool exact = false;
  if (bdq && known(bdq->in(0)) && known(bdq->in(1))) {
    const Value *bi = known(bdq->in(0)), *bs = known(bdq->in(1));
    const Value* bz = bdq->in(2).empty() ? nullptr : known(bdq->in(2));
    exact = bi->type == kInt32 && bi->numel() == mch && (!bz || scalar_int_equal(*bz)) && (!bz || bz->i[0] == 0) &&
            (bs->numel() == 1 || bs->numel() == mch);
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
    bool finite = true;
    for (int64_t c = 0; finite && c < mch; ++c) {
      const double s = double(xs->f[0]) * double(ws->numel() == 1 ? ws->f[0] : ws->f[size_t(c)]);
      const double q = std::nearbyint(double(bf->f[size_t(c)]) / s);
      finite = !std::isnan(q);  // 0/0 or a NaN bias: no int32 value
      bq.i[size_t(c)] = finite ? int64_t(std::clamp(q, -2147483648.0, 2147483647.0)) : 0;
    }
    if (!finite) {
      (*unfolded)[n.name] = "its bias '" + n.in(2) + "' is not a number at the scale x_scale * w_scale";
      return false;
    }
  } else {
    (*unfolded)[n.name] =
        "its bias '" + n.in(2) + "' is neither a constant nor an int32 constant behind a DequantizeLinear";
    return false;
  }
  const std::string bname = n.name + "/bias_q";
  m.consts[bname] = bq;
  f->inputs.push_back(bname);
  return true;
}

void QdqFolder::remove_dropped() {
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
        const bool any =
            std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return used.count(o); });
        if (any)
          live.push_back(std::move(n));
        else
          changed = true;
      }
      m.nodes = std::move(live);
    }
  }
}

}  // namespace

int fold_qdq(Model& m, const Known& known, bool exact_host, std::map<std::string, std::string>* unfolded) {
  int folded = QdqFolder(m, known, exact_host, unfolded).run();
  // What no quantized op absorbed: constant DequantizeLinear nodes left over,
  // then chains of float elementwise ops between a DQ and a Q.
  folded += fold_constant_dq(m);
  folded += fold_lookup_chains(m, known);
  folded += fold_lookup_pairs(m, known);
  return folded + (exact_host ? 0 : fold_row_norms(m, known));
}

}  // namespace loom::onnxfe
