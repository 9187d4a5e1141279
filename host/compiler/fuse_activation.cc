// Activation fusion: folds a relu/clip into the clamp of its producing
// conv/gemm/add when that is bit-exact with running it separately.
#include <algorithm>
#include <string>

#include "compiler/chunks.h"
#include "compiler/cost_model.h"
#include "compiler/pass.h"
#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

bool same_q(const ir::QParams& a, const ir::QParams& b) { return a.scale == b.scale && a.zero_point == b.zero_point; }

class FuseActivationPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fuse-activation",
                            {PassOption::Fusion, PassOption::CostParams},
                            {{"fused", "activations folded into their producer's clamp"},
                             {"not_fused", "activations left as layers"},
                             {"saved_predicted_cycles", "predicted cycles the fused activations save"}}};
    return i;
  }

  Status run(CompileState& s) override {
    ir::Graph& g = s.graph;
    std::vector<bool> erased(g.nodes.size(), false);
    for (size_t li = 0; li < s.layers.size(); ++li) {
      Layer& act = s.layers[li];
      if (!act.props->is_activation) continue;
      const ir::Node& r = g.nodes[act.node];
      std::string why;
      saving_.clear();
      Layer* prod = producer_layer(s, r.inputs[0]);
      if (s.fusion() == Fusion::None) {
        why = "fusion policy none";
      } else if (!prod || !prod->props->takes_activation) {
        why = "producer is not a conv/gemm/add";
      } else if (erased[prod->node]) {
        why = "producer already removed";
      } else {
        why = legal(s, *prod, act);
        if (why.empty() && s.fusion() == Fusion::Cost) why = weigh(s, act);
        if (why.empty()) apply(s, *prod, act);
      }
      if (why.empty()) {
        erased[act.node] = true;
        bump("fused");
        prod->name += "+" + r.name;
        s.decide(prod->name, name(),
                 "folded " + std::string(act.props->name) + " '" + r.name + "' into the output clamp [" +
                     std::to_string(g.nodes[prod->node].attrs.act.lo) + ", " +
                     std::to_string(g.nodes[prod->node].attrs.act.hi) + "]",
                 saving_);
      } else {
        bump("not_fused");
        s.decide(act.name, name(), "kept separate", ": " + why);
      }
    }
    // Drop fused nodes and renumber the layers' node indices.
    std::vector<size_t> remap(g.nodes.size(), 0);
    std::vector<ir::Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      remap[i] = kept.size();
      if (!erased[i]) kept.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(kept);
    std::vector<Layer> layers;
    for (auto& l : s.layers) {
      if (erased[l.node]) continue;
      l.node = remap[l.node];
      layers.push_back(std::move(l));
    }
    s.layers = std::move(layers);
    return Status::ok();
  }

 private:
  static Layer* producer_layer(CompileState& s, const std::string& tensor) {
    for (auto& l : s.layers)
      if (s.graph.nodes[l.node].outputs[0] == tensor) return &l;
    return nullptr;
  }

  /// The cost policy: folding the clamp costs the producer nothing (its
  /// POSTOP/ELTWISE clamp fields), so the group is faster exactly when the
  /// activation layer it removes has a positive predicted cost. Records the
  /// predicted saving for the decision text.
  std::string weigh(const CompileState& s, const Layer& act) {
    Layer alone = act;
    best_eltwise_chunk(s, alone);  // as the tiling pass would tile it
    const Cost& c = alone.cost;
    saving_ = "; cost model: saves " + std::to_string(c.cycles) + " predicted cycles, " +
              std::to_string(c.dram_read + c.dram_written) + " DRAM bytes and " + std::to_string(c.insns) +
              " instructions, no scratchpad added";
    bump("saved_predicted_cycles", int64_t(c.cycles));
    if (c.cycles == 0) return "cost model predicts no saving";
    return "";
  }

  /// Returns why fusing `act` into `prod` is not exact, or "" when it is.
  static std::string legal(CompileState& s, Layer& prod, Layer& act) {
    ir::Graph& g = s.graph;
    const ir::Node& p = g.nodes[prod.node];
    const ir::Node& r = g.nodes[act.node];
    const std::string& mid = r.inputs[0];
    int consumers = 0;
    for (const auto& n : g.nodes)
      for (const auto& in : n.inputs) consumers += in == mid;
    if (consumers != 1) return "'" + mid + "' has " + std::to_string(consumers) + " consumers";
    if (std::count(g.outputs.begin(), g.outputs.end(), mid)) return "'" + mid + "' is a graph output";
    if (!same_q(g.tensor(mid).q, g.tensor(r.outputs[0]).q)) return "input and output quantization differ";
    auto eq = ir::elt_quant(g, r);
    if (!eq) return "no integer parameters: " + eq.error().str();
    // With equal quantization the activation is clamp(x, lo, hi) only if its
    // requantization is the identity (mult / 2^shift == 1).
    if (eq->a_zp != eq->y_zp || int64_t(eq->a.mult) != (int64_t(1) << eq->a.shift))
      return "requantization is not the identity";
    const int32_t lo = std::max(p.attrs.act.lo, eq->lo), hi = std::min(p.attrs.act.hi, eq->hi);
    if (lo > hi) return "clamp ranges do not overlap";
    return "";
  }

  static void apply(CompileState& s, Layer& prod, Layer& act) {
    ir::Graph& g = s.graph;
    ir::Node& p = g.nodes[prod.node];
    const ir::Node& r = g.nodes[act.node];
    auto eq = ir::elt_quant(g, r);
    p.attrs.act = {std::max(p.attrs.act.lo, eq->lo), std::min(p.attrs.act.hi, eq->hi)};
    p.outputs[0] = r.outputs[0];
  }

  std::string saving_;
};

}  // namespace

std::unique_ptr<Pass> make_fuse_activation_pass() { return std::make_unique<FuseActivationPass>(); }

}  // namespace loom::compiler
