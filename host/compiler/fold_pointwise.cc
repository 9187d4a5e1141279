// Pointwise folding: element-wise ops that together compute a function of
// one int8 tensor become one table lookup (ELTWISE lut).
//
// Exporters spell GELU as x * 0.5 * (1 + erf(x / sqrt 2)), HardSwish as
// x * relu6(x + 3) / 6, SiLU as x * sigmoid(x): after quantization each
// step is its own pass over the tensor (a lookup, an add, two muls), but the
// result depends on x's 256 values only. The pass finds every tensor t that
// relu, clip, lut, add and mul compute from one tensor x and constants that
// hold one value, and replaces t's producer by lut(x, table) where
// table[v + 128] is t for x = v, evaluated by the direct reference on the
// 256 values: bit-exact with running the ops one by one. Ops left without
// readers are dropped. One op alone is left as it is, and so is every op
// under the fusion policy `none` (each runs as written).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

using ir::Node;
using ir::OpKind;

bool pointwise(OpKind op) {
  return op == OpKind::Relu || op == OpKind::Clip || op == OpKind::Lut || op == OpKind::Add || op == OpKind::Mul;
}

/// A constant that holds one value (a scalar spread over a shape).
bool uniform(const ir::TensorInfo& t) {
  if (!t.is_const || t.dtype != DType::I8 || t.data.numel() == 0) return false;
  const int8_t* d = t.data.i8();
  return std::all_of(d, d + t.data.numel(), [&](int8_t v) { return v == d[0]; });
}

class FoldPointwisePass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{
        "fold-pointwise",
        {PassOption::Fusion},
        {{"lookups", "pointwise chains folded into one lut"}, {"folded_ops", "ops folded into those luts"}}};
    return i;
  }

  Status run(CompileState& s) override {
    if (s.fusion() == Fusion::None) return Status::ok();
    ir::Graph& g = s.graph;
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i) producer[g.nodes[i].outputs[0]] = i;
    // src[t]: the one tensor t is a pointwise function of (t itself when none).
    std::map<std::string, std::string> src;
    std::map<std::string, int> depth;  // pointwise ops between src and t
    auto source = [&](const std::string& t) { return src.count(t) ? src[t] : t; };
    for (const Node& n : g.nodes) {
      const std::string& y = n.outputs[0];
      std::string from;
      bool ok = pointwise(n.op) && g.tensor(y).dtype == DType::I8;
      int d = 0;
      for (size_t k = 0; ok && k < n.inputs.size(); ++k) {
        const ir::TensorInfo& in = g.tensor(n.inputs[k]);
        if (in.is_const) {
          ok = n.op == OpKind::Lut ? k == 1 : uniform(in);
          continue;
        }
        const std::string s0 = source(n.inputs[k]);
        ok = in.shape == g.tensor(y).shape && (from.empty() || from == s0);
        from = s0;
        d = std::max(d, depth.count(n.inputs[k]) ? depth[n.inputs[k]] : 0);
      }
      if (ok && !from.empty() && !g.tensor(from).is_const) {
        src[y] = from;
        depth[y] = d + 1;
      }
    }
    // Fold every tensor that is read outside the pointwise ops of its source.
    std::set<std::string> outs(g.outputs.begin(), g.outputs.end());
    std::map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& in : g.nodes[i].inputs) readers[in].push_back(i);
    std::vector<std::pair<size_t, Node>> lookups;  // node index -> its replacement
    for (const auto& [t, x] : src) {
      if (depth[t] < 2) continue;
      bool escapes = outs.count(t) > 0;
      for (size_t r : readers[t]) escapes = escapes || source(g.nodes[r].outputs[0]) != x;
      if (!escapes) continue;
      const std::vector<size_t> nodes = region(g, producer, t, x);
      auto table = evaluate(g, nodes, t, x);
      if (!table) return table.error();
      lookups.emplace_back(producer.at(t), lookup(s, nodes, t, x, std::move(*table)));
    }
    for (auto& [i, n] : lookups) g.nodes[i] = std::move(n);
    drop_unread(g);
    return Status::ok();
  }

 private:
  /// The nodes from x to t, in graph order.
  static std::vector<size_t> region(const ir::Graph& g, const std::map<std::string, size_t>& producer,
                                    const std::string& t, const std::string& x) {
    std::set<size_t> seen;
    std::vector<std::string> todo{t};
    while (!todo.empty()) {
      const std::string u = todo.back();
      todo.pop_back();
      if (u == x || !producer.count(u) || g.tensor(u).is_const) continue;
      if (seen.insert(producer.at(u)).second)
        for (const auto& in : g.nodes[producer.at(u)].inputs) todo.push_back(in);
    }
    return {seen.begin(), seen.end()};
  }

  /// t for x = -128..127, by the direct reference on a copy of the region.
  static Expected<Tensor> evaluate(const ir::Graph& g, const std::vector<size_t>& nodes, const std::string& t,
                                   const std::string& x) {
    ir::Graph m;
    m.name = "pointwise";
    // Tensors over the 256 values of x; a one-valued constant spread over
    // them, a lookup's table as it is.
    auto add = [&](const std::string& name, bool table) {
      ir::TensorInfo ti = g.tensor(name);
      if (table) {
        m.tensors[name] = ti;
        return;
      }
      ti.shape = {256};
      if (ti.is_const) {
        const int8_t v = ti.data.i8()[0];  // uniform: one value
        ti.data = Tensor(DType::I8, {256});
        std::fill(ti.data.i8(), ti.data.i8() + 256, v);
      }
      m.tensors[name] = ti;
    };
    add(x, false);
    m.inputs = {x};
    for (size_t i : nodes) {
      const Node& n = g.nodes[i];
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!m.tensors.count(n.inputs[k])) add(n.inputs[k], n.op == OpKind::Lut && k == 1);
      add(n.outputs[0], false);
      m.nodes.push_back(n);
    }
    m.outputs = {t};
    Tensor xs(DType::I8, {256});
    for (int v = 0; v < 256; ++v) xs.i8()[v] = int8_t(v - 128);
    auto r = ir::run_reference(m, {{x, xs}});
    if (!r) return r.error();
    return r->at(t);
  }

  Node lookup(CompileState& s, const std::vector<size_t>& nodes, const std::string& t, const std::string& x,
              Tensor table) {
    ir::Graph& g = s.graph;
    std::string name;
    for (size_t i : nodes) name += (name.empty() ? "" : "+") + g.nodes[i].name;
    ir::TensorInfo ti;
    ti.name = t + "/table";
    ti.dtype = DType::I8;
    ti.shape = {256};
    ti.is_const = true;
    ti.data = std::move(table);
    g.tensors[ti.name] = ti;
    Node n;
    n.name = name;
    n.op = OpKind::Lut;
    n.inputs = {x, ti.name};
    n.outputs = {t};
    bump("folded_ops", int64_t(nodes.size()));
    bump("lookups");
    s.decide(name, this->name(), "one lookup of '" + x + "'",
             ": " + std::to_string(nodes.size()) + " element-wise ops of one input, evaluated on its 256 values");
    return n;
  }

  /// Drops nodes whose output nothing reads (the folded ops), with their tensors.
  static void drop_unread(ir::Graph& g) {
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> read(g.outputs.begin(), g.outputs.end());
      for (const auto& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
      for (size_t k = g.nodes.size(); k-- > 0;) {
        if (read.count(g.nodes[k].outputs[0])) continue;
        g.tensors.erase(g.nodes[k].outputs[0]);
        g.nodes.erase(g.nodes.begin() + std::ptrdiff_t(k));
        changed = true;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_pointwise_pass() { return std::make_unique<FoldPointwisePass>(); }

}  // namespace loom::compiler
