// Transpose folding: a GEMM whose activation b is a transpose of its last
// two dims reads b as it lies (GEMM b_trans) instead of after a DMA gather.
//
// The gather that swaps a tensor's last two dims moves one byte a DMA row
// (attention's Kᵀ: 4.4 cycles a byte on tlm `default`); the GEMM reads B's
// transpose as fast as B itself. The pass walks back from every gemm's
// activation b through single-use element-wise ops (relu, clip, lut, and
// add/mul with a constant of b's shape) and reshapes that keep the last
// two dims,
// to a transpose T. The last two dims of every tensor on that chain are
// swapped (constants transposed with them), T's perm loses its last swap
// (T disappears when that leaves the identity), and the gemm gets trans_b.
// It only does so when that moves the innermost-dim gather out of T: the
// new T keeps the innermost dim in place (whole rows a DMA row) or is gone.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

using ir::Node;
using ir::OpKind;

void swap_last_two(std::vector<int64_t>& v) { std::swap(v[v.size() - 1], v[v.size() - 2]); }

/// `t` ([..., R, C] int8, row-major) with its last two dims swapped.
Tensor transposed(const Tensor& t) {
  Tensor y = t;
  swap_last_two(y.shape);
  const int64_t r = t.shape[t.shape.size() - 2], c = t.shape.back(), plane = r * c;
  const int8_t* x = t.i8();
  int8_t* o = y.i8();
  for (int64_t p = 0; p < t.numel(); p += plane)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) o[p + j * r + i] = x[p + i * c + j];
  return y;
}

class FoldTransposePass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fold-transpose", {}, {{"folded", "gemm operand transposes read as b_trans"}}};
    return i;
  }

  Status run(CompileState& s) override {
    ir::Graph& g = s.graph;
    index(g);
    std::set<size_t> erased;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (n.op != OpKind::Gemm || n.attrs.trans_b || n.inputs.size() < 2 || g.tensor(n.inputs[1]).is_const) continue;
      std::vector<size_t> chain;  // producers from b back to the transpose (exclusive)
      const size_t t = find(g, n.inputs[1], &chain);
      if (t == kNone) continue;
      apply(s, i, t, chain, &erased);
    }
    if (erased.empty()) return Status::ok();
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!erased.count(i)) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
    return Status::ok();
  }

 private:
  static constexpr size_t kNone = ~size_t(0);
  std::map<std::string, size_t> producer_;
  std::map<std::string, int> readers_;
  std::set<std::string> outputs_;

  void index(const ir::Graph& g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
      for (const auto& x : g.nodes[i].inputs)
        if (!x.empty()) ++readers_[x];
    }
    outputs_.insert(g.outputs.begin(), g.outputs.end());
  }

  bool private_tensor(const std::string& t) const {
    auto r = readers_.find(t);
    return r != readers_.end() && r->second == 1 && !outputs_.count(t) && producer_.count(t);
  }

  /// The activation input of an element-wise chain node, or "" when the
  /// node cannot carry swapped last dims.
  static std::string chain_input(const ir::Graph& g, const Node& p) {
    const auto& y = g.tensor(p.outputs[0]);
    switch (p.op) {
      case OpKind::Relu:
      case OpKind::Clip:
      case OpKind::Lut:
        return p.inputs[0];
      case OpKind::Add:
      case OpKind::Mul: {
        const auto& a = g.tensor(p.inputs[0]);
        const auto& b = g.tensor(p.inputs[1]);
        // The operand that is not carried along must be a constant of the
        // output's shape (transposed with it).
        if (!a.is_const && b.is_const && b.shape == y.shape && a.shape == y.shape) return p.inputs[0];
        if (!b.is_const && a.is_const && a.shape == y.shape && b.shape == y.shape) return p.inputs[1];
        return "";
      }
      case OpKind::Reshape:
      case OpKind::Flatten: {
        const auto& x = g.tensor(p.inputs[0]).shape;
        const auto& ys = y.shape;
        if (x.size() < 2 || ys.size() < 2 || x[x.size() - 1] != ys[ys.size() - 1] ||
            x[x.size() - 2] != ys[ys.size() - 2])
          return "";
        return p.inputs[0];
      }
      default:
        return "";
    }
  }

  /// The transpose that b reaches through chain nodes, or kNone.
  size_t find(const ir::Graph& g, std::string b, std::vector<size_t>* chain) const {
    for (int depth = 0; depth < 16; ++depth) {
      if (!private_tensor(b)) return kNone;
      const size_t pi = producer_.at(b);
      const Node& p = g.nodes[pi];
      if (p.op == OpKind::Transpose) {
        const auto& perm = p.attrs.perm;
        const size_t r = perm.size();
        if (r < 2 || perm[r - 1] == int64_t(r) - 1) return kNone;  // already whole rows
        // Without its last swap T must keep the innermost dim (or vanish).
        if (perm[r - 2] != int64_t(r) - 1) return kNone;
        return pi;
      }
      const std::string in = chain_input(g, p);
      if (in.empty()) return kNone;
      chain->push_back(pi);
      b = in;
    }
    return kNone;  // a longer chain is left as it is
  }

  void apply(CompileState& s, size_t gi, size_t ti, const std::vector<size_t>& chain, std::set<size_t>* erased) {
    ir::Graph& g = s.graph;
    Node& t = g.nodes[ti];
    const std::string t_out = t.outputs[0];
    // The chain's tensors (and their constants) with the last two dims swapped.
    for (size_t ci : chain) {
      Node& p = g.nodes[ci];
      swap_last_two(g.tensor(p.outputs[0]).shape);
      if (p.op == OpKind::Reshape) p.attrs.shape = g.tensor(p.outputs[0]).shape;
      if (p.op != OpKind::Add && p.op != OpKind::Mul) continue;
      for (auto& in : p.inputs) {
        ir::TensorInfo c = g.tensor(in);
        if (!c.is_const) continue;
        c.data = transposed(c.data);
        c.shape = c.data.shape;
        c.name = in + "/transposed";
        g.tensors[c.name] = c;
        in = c.name;
      }
    }
    Node& gemm = g.nodes[gi];
    gemm.attrs.trans_b = true;
    // T without its last swap: gone when that is the identity.
    std::vector<int64_t> q = t.attrs.perm;
    swap_last_two(q);
    bool ident = true;
    for (size_t d = 0; d < q.size(); ++d) ident = ident && q[d] == int64_t(d);
    swap_last_two(g.tensor(t_out).shape);
    const std::string s_name = gemm.name;
    if (ident) {
      const std::string src = t.inputs[0];
      for (auto& n : g.nodes)
        for (auto& in : n.inputs)
          if (in == t_out) in = src;
      g.tensors.erase(t_out);
      erased->insert(ti);
    } else {
      t.attrs.perm = q;
    }
    bump("folded");
    s.decide(s_name, name(), "reads b as its transpose (GEMM b_trans)",
             std::string(": the transpose '") + t.name + "' " + (ident ? "is dropped" : "keeps whole rows"));
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_transpose_pass() { return std::make_unique<FoldTransposePass>(); }

}  // namespace loom::compiler
