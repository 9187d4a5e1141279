// Residual fusion: proposes folding an add into the POSTOP of the conv/gemm
// producing one of its operands. POSTOP's `rescale` form keeps the conv's
// clamped int8 result x and adds the other operand from IN with one
// rounding, rqs(x - a_zp, a_mult, other - b_zp, b_mult, a_shift) + y_zp:
// exactly the ELTWISE add without x's round trip through memory, so the
// fused and the separate form are bit-exact with each other and with the
// reference. (POSTOP's `residual` without `rescale` rounds the two terms
// separately, which an add rounded once cannot be folded into exactly.)
// The other operand may be a constant, and one row of channels repeated over
// the pixels (a bias that an exporter quantized apart from its MatMul).
// Whether a legal group fuses is decided by the tiling pass from the cost
// model (the residual tile takes IN space and a second input stream), per
// the fusion policy.
#include <algorithm>
#include <functional>
#include <numeric>
#include <string>

#include "common/quant.h"
#include "compiler/pass.h"
#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

class FuseResidualPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fuse-residual",
                            {PassOption::Fusion},
                            {{"candidates", "adds proposed for a POSTOP residual"},
                             {"not_legal", "adds that cannot fold (the reason is a decision)"}}};
    return i;
  }

  Status run(CompileState& s) override {
    for (auto& add : s.layers) {
      if (add.props->op != ir::OpKind::Add) continue;
      const ir::Node& a = s.node(add);
      std::string why = "no operand is produced by a conv/gemm";
      for (int i = 0; i < 2; ++i) {
        std::vector<size_t> via;
        Layer* p = producer(s, a.inputs[size_t(i)], &via);
        if (!p || p->props->kind != LayerKind::Mac) continue;
        why = check(s, *p, add, i);
        if (!why.empty()) continue;
        p->res.via = via;
        bump("candidates");
        s.decide(p->name + "+" + a.name, name(), "legal as a requantizing add behind the post-op (rescale)",
                 ": one rounding of the sum, as the separate add");
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
  /// The layer producing `t`, through reshapes and flattens that nothing
  /// else reads (a MatMul on [1, S, K] is a gemm between two reshapes):
  /// their graph nodes in `via`, which a folded add absorbs too.
  static Layer* producer(CompileState& s, const std::string& t, std::vector<size_t>* via) {
    const ir::Graph& g = s.graph;
    std::string cur = t;
    for (int hops = 0; hops < 16; ++hops) {
      Layer* p = nullptr;
      for (auto& l : s.layers)
        if (g.nodes[l.node].outputs[0] == cur) p = &l;
      if (!p || p->props->kind != LayerKind::Alias) return p;
      const std::string& in = g.nodes[p->node].inputs[0];
      int readers = 0;
      for (const auto& n : g.nodes) readers += int(std::count(n.inputs.begin(), n.inputs.end(), in));
      if (readers != 1 || std::count(g.outputs.begin(), g.outputs.end(), in) || g.tensor(in).is_const) return nullptr;
      via->push_back(p->node);
      cur = in;
    }
    return nullptr;
  }

  std::string check(CompileState& s, Layer& p, const Layer& add, int i) {
    const ir::Graph& g = s.graph;
    const ir::Node& a = s.node(add);
    const std::string& mid = a.inputs[size_t(i)];
    const std::string& other = a.inputs[size_t(1 - i)];
    if (s.fusion() == Fusion::None) return "fusion policy none";
    if (p.res.candidate) return "'" + p.name + "' already takes a residual";
    int consumers = 0;
    for (const auto& n : g.nodes)
      for (const auto& in : n.inputs) consumers += in == mid;
    if (consumers != 1) return "'" + mid + "' has " + std::to_string(consumers) + " consumers";
    if (std::count(g.outputs.begin(), g.outputs.end(), mid)) return "'" + mid + "' is a graph output";
    // The other operand: of mid's shape, or one row of its channels repeated
    // over every pixel (a bias or a constant broadcast over the rows, read
    // into IN as one LOAD of rows 0 apart).
    const auto& ms = g.tensor(mid).shape;
    const auto& ps = g.tensor(s.node(p).outputs[0]).shape;  // mid is its reshape
    if (ms.empty() || ps.empty() || ms.back() != ps.back()) return "a reshape between them moves the channels";
    const bool row = g.tensor(other).shape != ms;
    const auto& os = g.tensor(other).shape;
    const int64_t row_len = std::accumulate(os.begin(), os.end(), int64_t(1), std::multiplies<>());
    if (row && (i != 0 || ms.empty() || !ir::repeats_over(os, ms) || row_len != ms.back()))
      return "operand shapes differ (the other is neither of its shape nor one row of its channels)";
    // The folded layer reads the other operand, so it must exist by then.
    bool before = g.tensor(other).is_const || std::count(g.inputs.begin(), g.inputs.end(), other) > 0;
    for (const auto& l : s.layers) {
      if (&l == &p) break;
      before = before || l.out_tensor(g) == other;
    }
    if (!before) return "the other operand '" + other + "' is computed after '" + p.name + "'";
    auto eq = ir::elt_quant(g, a);
    if (!eq) return "no integer parameters: " + eq.error().str();
    const Multiplier& mm = i == 0 ? eq->a : eq->b;
    const Multiplier& rm = i == 0 ? eq->b : eq->a;  // on mm's grid: one shift for the sum
    p.res.a_zp = i == 0 ? eq->a_zp : eq->b_zp;
    p.res.a_mult = mm.mult;
    p.res.a_shift = mm.shift;
    p.res.candidate = true;
    p.res.add = a.name;
    p.res.add_node = add.node;
    p.res.tensor = other;
    p.res.row = row;
    p.res.out = a.outputs[0];
    p.res.zp = i == 0 ? eq->b_zp : eq->a_zp;
    p.res.mult = rm.mult;
    p.res.out_zp = eq->y_zp;
    p.res.lo = eq->lo;
    p.res.hi = eq->hi;
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_residual_pass() { return std::make_unique<FuseResidualPass>(); }

}  // namespace loom::compiler
