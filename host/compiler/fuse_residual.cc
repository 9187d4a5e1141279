// Residual fusion: proposes folding an add into the POSTOP of the conv/gemm
// producing one of its operands (POSTOP's `residual` field adds the other
// operand, requantized, from IN). Two forms, both bit-exact with the
// separate conv and ELTWISE:
//  - plain: when the add requantizes the conv's operand by the identity
//    (equal scales) and the conv's own int8 clamp can never bind (an
//    interval bound over every int8 input, the constant weights and the
//    bias proves rq(acc) + y_zp within [lo, hi] for every output channel),
//    add(conv) = rq(acc) + out_zp + rq(other) in one requantizer pass;
//  - rescale (every other QDQ add, e.g. ResNet-50's and MobileNetV2's): the
//    conv's clamped int8 result x is requantized again inside the post-op,
//    rq(x - a_zp, a_mult, a_shift) + rq(other - b_zp, b_mult, b_shift) + y_zp,
//    which is the ELTWISE formula without x's round trip through memory.
// Whether a legal group fuses is decided by the tiling pass from the cost
// model (the residual tile takes IN space and a second input stream), per
// the fusion policy.
#include <algorithm>
#include <string>

#include "common/quant.h"
#include "compiler/pass.h"
#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

bool identity(const Multiplier& m) {
  return m.shift >= 1 && m.shift < 31 && int64_t(m.mult) == (int64_t(1) << m.shift);
}

class FuseResidualPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-residual"; }

  Status run(CompileState& s) override {
    for (auto& add : s.layers) {
      if (add.props->op != ir::OpKind::Add) continue;
      const ir::Node& a = s.node(add);
      std::string why = "no operand is produced by a conv/gemm";
      for (int i = 0; i < 2; ++i) {
        Layer* p = producer(s, a.inputs[size_t(i)]);
        if (!p || p->props->kind != LayerKind::Mac) continue;
        why = check(s, *p, add, i);
        if (!why.empty()) continue;
        bump("candidates");
        bump(p->res.rescale ? "rescale" : "plain");
        if (p->res.rescale)
          s.decide(p->name + "+" + a.name, name(), "legal as a requantizing add behind the post-op (rescale)",
                   ": " + p->res.why);
        else
          s.decide(p->name + "+" + a.name, name(), "legal",
                   ": the add requantizes '" + a.inputs[size_t(i)] +
                       "' by the identity and the interval bound proves its clamp never binds");
        break;
      }
      if (!why.empty()) {
        bump("not_legal");
        s.decide(add.name, name(), "kept separate", ": " + why);
      }
    }
    return Status::ok();
  }

 private:
  static Layer* producer(CompileState& s, const std::string& t) {
    for (auto& l : s.layers)
      if (s.graph.nodes[l.node].outputs[0] == t) return &l;
    return nullptr;
  }

  std::string check(CompileState& s, Layer& p, const Layer& add, int i) {
    const ir::Graph& g = s.graph;
    const ir::Node& a = s.node(add);
    const ir::Node& pn = s.node(p);
    const std::string& mid = a.inputs[size_t(i)];
    const std::string& other = a.inputs[size_t(1 - i)];
    if (s.opt.fusion == Fusion::None) return "fusion policy none";
    if (p.res.candidate) return "'" + p.name + "' already takes a residual";
    int consumers = 0;
    for (const auto& n : g.nodes)
      for (const auto& in : n.inputs) consumers += in == mid;
    if (consumers != 1) return "'" + mid + "' has " + std::to_string(consumers) + " consumers";
    if (std::count(g.outputs.begin(), g.outputs.end(), mid)) return "'" + mid + "' is a graph output";
    if (g.tensor(other).is_const) return "the other operand is a constant";
    if (g.tensor(other).shape != g.tensor(mid).shape) return "operand shapes differ";
    // The folded layer reads the other operand, so it must exist by then.
    bool before = std::count(g.inputs.begin(), g.inputs.end(), other) > 0;
    for (const auto& l : s.layers) {
      if (&l == &p) break;
      before = before || l.out_tensor(g) == other;
    }
    if (!before) return "the other operand '" + other + "' is computed after '" + p.name + "'";
    auto eq = ir::elt_quant(g, a);
    if (!eq) return "no integer parameters: " + eq.error().str();
    const Multiplier& mm = i == 0 ? eq->a : eq->b;
    const Multiplier& rm = i == 0 ? eq->b : eq->a;
    if (rm.shift < kMinShift || rm.shift > kMaxShift) return "residual shift out of range";
    auto mq = ir::mac_quant(g, pn);
    if (!mq) return "no integer parameters: " + mq.error().str();
    // The plain form needs an identity rescale and a proof that the conv's
    // clamp never binds; otherwise the post-op requantizes its int8 result.
    std::string plain;
    if (!identity(mm))
      plain = "the add rescales the conv output (scales differ)";
    else if (!p.mac.b_const)
      plain = "weights are not constant (no interval bound)";
    else
      plain = clamp_never_binds(g, pn, p.mac, *mq);
    if (!plain.empty() && (mm.shift < kMinShift || mm.shift > kMaxShift)) return "rescale shift out of range";
    p.res.rescale = !plain.empty();
    p.res.why = plain;
    p.res.a_zp = i == 0 ? eq->a_zp : eq->b_zp;
    p.res.a_mult = mm.mult;
    p.res.a_shift = mm.shift;
    p.res.candidate = true;
    p.res.add = a.name;
    p.res.add_node = add.node;
    p.res.tensor = other;
    p.res.out = a.outputs[0];
    p.res.zp = i == 0 ? eq->b_zp : eq->a_zp;
    p.res.mult = rm.mult;
    p.res.shift = rm.shift;
    p.res.out_zp = eq->y_zp;
    p.res.lo = eq->lo;
    p.res.hi = eq->hi;
    return "";
  }

  /// Interval of rq(acc + bias) + y_zp per output channel over all int8
  /// inputs (padding contributes 0, inside every interval).
  static std::string clamp_never_binds(const ir::Graph& g, const ir::Node& n, const MacGeom& m, const ir::MacQuant& q) {
    const ir::TensorInfo& w = g.tensor(n.inputs[1]);
    const int8_t* wd = w.data.i8();
    const int32_t* bias = nullptr;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) bias = g.tensor(n.inputs[2]).data.i32();
    const int64_t xlo = -128 - q.x_zp, xhi = 127 - q.x_zp;
    for (int64_t j = 0; j < m.Cout; ++j) {
      int64_t lo = bias ? bias[j] : 0, hi = lo;
      for (int64_t k = 0; k < m.K(); ++k) {
        const int64_t d = int64_t(wd[k * m.Cout + j]) - q.w_zp;
        lo += std::min(d * xlo, d * xhi);
        hi += std::max(d * xlo, d * xhi);
      }
      if (lo < INT32_MIN || hi > INT32_MAX) return "the accumulator bound exceeds int32 (clamp may bind)";
      const auto& mu = q.mult[size_t(j)];
      const int64_t ylo = int64_t(requantize(lo, mu.mult, mu.shift)) + q.y_zp;
      const int64_t yhi = int64_t(requantize(hi, mu.mult, mu.shift)) + q.y_zp;
      if (ylo < q.lo || yhi > q.hi)
        return "its clamp [" + std::to_string(q.lo) + ", " + std::to_string(q.hi) + "] may bind (channel " +
               std::to_string(j) + " spans [" + std::to_string(ylo) + ", " + std::to_string(yhi) +
               "]), so folding would change results";
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_residual_pass() { return std::make_unique<FuseResidualPass>(); }

}  // namespace loom::compiler
