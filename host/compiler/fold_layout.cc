// Layout folding: a chain of transposes and reshapes becomes one gather.
//
// Importers convert layouts at every op that wants another one: ViT's patch
// embedding goes NHWC -> NCHW (for the exporter's flatten) -> back to tokens
// [HW, C], two one-byte gathers that together move nothing; ShuffleNet's
// channel shuffle is NHWC -> NCHW, a 5-D transpose, and back. The pass
// composes every chain of transpose/reshape/flatten whose inner tensors
// have one reader into the index map it computes, writes that map as output
// dims with input strides, and replaces the chain by reshape -> one
// transpose -> reshape (by one reshape when the map is the identity). It
// does so only when the chain held at least two transposes.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "compiler/cost_model.h"
#include "compiler/index_map.h"
#include "compiler/pass.h"

namespace loom::compiler {
namespace {

using ir::Node;
using ir::OpKind;

bool layout_op(OpKind op) { return op == OpKind::Transpose || op == OpKind::Reshape || op == OpKind::Flatten; }

constexpr int64_t kMaxElems = int64_t(1) << 24;  // the index map is built in memory

/// Output element i reads input element map[i], after the chain's nodes.
std::vector<int32_t> index_map(const ir::Graph& g, const std::vector<const Node*>& chain) {
  const auto& s = g.tensor(chain.front()->inputs[0]).shape;
  std::vector<int32_t> f(size_t(std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>())));
  std::iota(f.begin(), f.end(), 0);
  for (const Node* n : chain) f = after_move(g, *n, f);
  return f;
}

/// `f` as output dims (outer first) with the input stride of each, or
/// nothing when it is not one transpose of a reshaped input.
bool as_dims(const std::vector<int32_t>& f, std::vector<int64_t>* dims, std::vector<int64_t>* strides) {
  const int64_t total = int64_t(f.size());
  std::vector<int64_t> d, st;  // innermost first
  for (int64_t pos = 1; pos < total;) {
    const int64_t stride = f[size_t(pos)];
    int64_t n = 1;
    while (pos * (n + 1) <= total && f[size_t(pos * n)] == n * stride) ++n;
    while (n > 1 && (total / pos) % n != 0) --n;  // a dim divides what is left (the map is checked below)
    if (n == 1 || stride == 0) return false;
    d.push_back(n);
    st.push_back(stride);
    pos *= n;
  }
  if (d.empty()) d = {total}, st = {1};
  // The first dim is read at stride f(1); the map is checked whole.
  std::vector<int64_t> idx(d.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t src = 0;
    for (size_t k = 0; k < d.size(); ++k) src += idx[k] * st[k];
    if (src != f[size_t(i)]) return false;
    for (size_t k = 0; k < d.size(); ++k) {
      if (++idx[k] < d[k]) break;
      idx[k] = 0;
    }
  }
  dims->assign(d.rbegin(), d.rend());
  strides->assign(st.rbegin(), st.rend());
  return true;
}

class FoldLayoutPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fold-layout",
                            {PassOption::CostParams},
                            {{"chains", "transpose/reshape chains composed"},
                             {"transposes_removed", "transposes those chains no longer run"},
                             {"kept_chains", "chains kept as they are (cheaper)"}}};
    return i;
  }

  Status run(CompileState& s) override {
    ir::Graph& g = s.graph;
    std::map<std::string, size_t> producer, readers;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      producer[g.nodes[i].outputs[0]] = i;
      for (const auto& in : g.nodes[i].inputs) ++readers[in];
    }
    const std::set<std::string> outs(g.outputs.begin(), g.outputs.end());
    auto inner = [&](const std::string& t) { return readers[t] == 1 && !outs.count(t); };
    const CostParams p = s.cost();
    std::set<size_t> erased;
    std::map<size_t, std::vector<Node>> replace;  // a chain's last node -> the nodes that take its place
    for (size_t i = g.nodes.size(); i-- > 0;) {
      const Node& last = g.nodes[i];
      if (erased.count(i) || !layout_op(last.op) || (inner(last.outputs[0]) && reads_layout(g, last.outputs[0])))
        continue;
      // Back from `last` while the producer is a layout op with one reader.
      std::vector<size_t> chain{i};
      for (std::string t = last.inputs[0]; producer.count(t) && inner(t) && layout_op(g.nodes[producer[t]].op);
           t = g.nodes[producer[t]].inputs[0])
        chain.insert(chain.begin(), producer[t]);
      int moves = 0;
      for (size_t c : chain) moves += g.nodes[c].op == OpKind::Transpose;
      const std::string src = g.nodes[chain.front()].inputs[0];
      if (moves < 2 || g.tensor(src).is_const || shape_numel(g.tensor(src).shape) > kMaxElems) continue;
      std::vector<const Node*> nodes;
      for (size_t c : chain) nodes.push_back(&g.nodes[c]);
      std::vector<int64_t> dims, strides;
      if (!as_dims(index_map(g, nodes), &dims, &strides)) continue;
      // Only when the one gather is cheaper than the chain's (a composed
      // shuffle can be a one-byte gather where the chain's were not).
      const Factors f = factors(dims, strides);
      const uint64_t E = uint64_t(shape_numel(g.tensor(src).shape));
      uint64_t before = 0;
      for (const Node* n : nodes)
        if (n->op == OpKind::Transpose)
          before += gather_cycles(p, permute_of(g.tensor(n->inputs[0]).shape, n->attrs.perm), E);
      const uint64_t after = f.ident ? 0 : gather_cycles(p, permute_of(f.in_shape, f.perm), E);
      if (after >= before) {
        bump("kept_chains");
        continue;
      }
      std::string name;
      for (const Node* n : nodes) name += (name.empty() ? "" : "+") + n->name;
      replace[i] = rewrite(s, name, src, last.outputs[0], dims, f, before, after);
      bump("chains");
      bump("transposes_removed", moves - (f.ident ? 0 : 1));
      for (size_t c : chain) erased.insert(c);
    }
    if (erased.empty()) return Status::ok();
    std::vector<Node> kept;
    std::set<std::string> dropped;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!erased.count(i)) {
        kept.push_back(std::move(g.nodes[i]));
      } else if (replace.count(i)) {
        for (auto& n : replace[i]) kept.push_back(std::move(n));
      } else {
        dropped.insert(g.nodes[i].outputs[0]);  // an inner tensor of a chain
      }
    }
    for (const auto& t : dropped) g.tensors.erase(t);
    g.nodes = std::move(kept);
    return Status::ok();
  }

 private:
  static bool sorted(const std::vector<int64_t>& st) { return std::is_sorted(st.rbegin(), st.rend()); }

  /// True when the one reader of `t` is a layout op (the chain goes on there).
  static bool reads_layout(const ir::Graph& g, const std::string& t) {
    for (const auto& n : g.nodes)
      for (const auto& in : n.inputs)
        if (in == t) return layout_op(n.op);
    return false;
  }

  /// The input as the map's factors (its output dims by stride, largest
  /// first) and the transpose that puts them in output order.
  struct Factors {
    std::vector<int64_t> in_shape, perm;
    bool ident = false;
  };
  static Factors factors(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
    std::vector<size_t> order(dims.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
    Factors f;
    f.perm.resize(dims.size());
    for (size_t k = 0; k < order.size(); ++k) {
      f.in_shape.push_back(dims[order[k]]);
      f.perm[order[k]] = int64_t(k);  // output dim j is input factor perm[j]
    }
    f.ident = sorted(strides);
    return f;
  }

  /// src -> reshape to the input's factors -> transpose -> reshape -> y.
  std::vector<Node> rewrite(CompileState& s, const std::string& name, const std::string& src, const std::string& y,
                            const std::vector<int64_t>& dims, const Factors& f, uint64_t before, uint64_t after) {
    ir::Graph& g = s.graph;
    std::vector<Node> added;
    const std::string why = ": predicted load cycles " + std::to_string(before) + " -> " + std::to_string(after);
    auto tensor = [&](const std::string& n, std::vector<int64_t> shape) {
      ir::TensorInfo ti = g.tensor(y);
      ti.name = n;
      ti.shape = std::move(shape);
      g.tensors[n] = ti;
    };
    auto reshape = [&](const std::string& nm, const std::string& in, const std::string& out) {
      Node r;
      r.name = nm;
      r.op = OpKind::Reshape;
      r.inputs = {in};
      r.outputs = {out};
      r.attrs.shape = g.tensor(out).shape;
      added.push_back(r);
    };
    if (f.ident) {
      reshape(name, src, y);
      s.decide(name, this->name(), "one reshape", ": the chain moves no data" + why);
      return added;
    }
    tensor(y + "/factors", f.in_shape);
    tensor(y + "/gathered", dims);
    reshape(name + "/factors", src, y + "/factors");
    Node t;
    t.name = name;
    t.op = OpKind::Transpose;
    t.inputs = {y + "/factors"};
    t.outputs = {y + "/gathered"};
    t.attrs.perm = f.perm;
    added.push_back(t);
    reshape(name + "/shape", y + "/gathered", y);
    s.decide(name, this->name(), "one transpose", ": the chain's transposes compose into one gather" + why);
    return added;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_layout_pass() { return std::make_unique<FoldLayoutPass>(); }

}  // namespace loom::compiler
