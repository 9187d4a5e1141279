// Memory planning: lays out device memory relative to the plan base:
// constants (prepacked weights, PARAM tables, constant operands), then one
// buffer per activation; reshape/flatten alias their input.
#include <cstring>
#include <string>

#include "compiler/pass.h"
#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

constexpr uint64_t kAlign = 64;  // one AXI burst beat group; keeps DMA rows aligned

void put_i32(std::vector<uint8_t>& v, int32_t x) {
  uint8_t b[4];
  std::memcpy(b, &x, 4);  // little-endian hosts only, as the plan format
  v.insert(v.end(), b, b + 4);
}

class MemoryPlanPass final : public Pass {
 public:
  std::string_view name() const override { return "memory-plan"; }

  Status run(CompileState& s) override {
    auto& c = s.plan.constants;
    c.clear();
    s.tensor_offset.clear();
    const ir::Graph& g = s.graph;
    for (auto& l : s.layers) {
      const ir::Node& n = s.node(l);
      if (l.props->kind == LayerKind::Mac) {
        LOOM_TRY(pack_mac(s, l, n));
      } else if (l.props->kind == LayerKind::Eltwise) {
        for (const auto& in : n.inputs) {
          const ir::TensorInfo& t = g.tensor(in);
          if (!t.is_const || s.tensor_offset.count(in)) continue;
          c.resize(align_up(c.size(), kAlign));
          s.tensor_offset[in] = c.size();
          c.insert(c.end(), t.data.data.begin(), t.data.data.end());
        }
      }
    }
    const uint64_t const_bytes = c.size();
    s.plan.constants_offset = 0;
    uint64_t top = align_up(const_bytes, kAlign);
    auto place = [&](const std::string& name) {
      if (s.tensor_offset.count(name)) return;
      const ir::TensorInfo& t = g.tensor(name);
      s.tensor_offset[name] = top;
      top = align_up(top + uint64_t(numel(t.shape)) * dtype_size(t.dtype), kAlign);
      bump("activation_buffers");
    };
    for (const auto& in : g.inputs) place(in);
    for (const auto& l : s.layers) {
      const ir::Node& n = s.node(l);
      if (l.props->kind == LayerKind::Alias && !s.tensor_offset.count(n.outputs[0])) {
        s.tensor_offset[n.outputs[0]] = s.tensor_offset.at(n.inputs[0]);
        bump("aliases");
      } else {
        place(n.outputs[0]);
      }
    }
    s.plan.memory_bytes = top;
    auto bind = [&](const std::string& name) {
      const ir::TensorInfo& t = g.tensor(name);
      plan::TensorBinding b;
      b.name = name;
      b.dtype = t.dtype;
      b.shape = t.shape;
      b.scale = t.q.scale.empty() ? 1.0 : t.q.scale[0];
      b.zero_point = t.q.zero_point;
      b.offset = s.tensor_offset.at(name);
      return b;
    };
    s.plan.inputs.clear();
    s.plan.outputs.clear();
    for (const auto& in : g.inputs) s.plan.inputs.push_back(bind(in));
    for (const auto& out : g.outputs) s.plan.outputs.push_back(bind(out));
    set("constant_bytes", int64_t(const_bytes));
    set("activation_bytes", int64_t(top - align_up(const_bytes, kAlign)));
    set("memory_bytes", int64_t(top));
    s.decide(g.name, name(),
             "constants " + std::to_string(const_bytes) + " B at 0, activations " +
                 std::to_string(top - align_up(const_bytes, kAlign)) + " B, total " + std::to_string(top) + " B");
    return Status::ok();
  }

 private:
  static int64_t numel(const std::vector<int64_t>& sh) {
    int64_t v = 1;
    for (auto d : sh) v *= d;
    return v;
  }

  /// Weights as [group][K][Ng] so one 2-D LOAD fetches any K x n tile, and
  /// the (bias, mult, shift) table of every output channel.
  static Status pack_mac(CompileState& s, Layer& l, const ir::Node& n) {
    auto& c = s.plan.constants;
    const MacGeom& m = l.mac;
    auto q = ir::mac_quant(s.graph, n);
    if (!q) return Status(q.error()).context("node '" + n.name + "'");
    if (int64_t(q->mult.size()) != m.Cout)
      return make_error("node '" + n.name + "'", "expected one multiplier per output channel");
    if (m.b_const) {
      const ir::TensorInfo& w = s.graph.tensor(n.inputs[1]);
      const int8_t* wd = w.data.i8();
      if (int64_t(w.data.data.size()) != m.K() * m.Cout)
        return make_error("node '" + n.name + "'", "weight data has the wrong size");
      c.resize(align_up(c.size(), kAlign));
      l.wgt_offset = c.size();
      for (int64_t g = 0; g < m.groups; ++g)
        for (int64_t k = 0; k < m.K(); ++k)
          for (int64_t j = 0; j < m.Ng; ++j) c.push_back(uint8_t(wd[k * m.Cout + g * m.Ng + j]));
    }
    const int32_t* bias = nullptr;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const ir::TensorInfo& b = s.graph.tensor(n.inputs[2]);
      if (b.data.numel() != m.Cout || b.data.dtype != DType::I32)
        return make_error("node '" + n.name + "'", "bias must hold one int32 per output channel");
      bias = b.data.i32();
    }
    c.resize(align_up(c.size(), kAlign));
    l.param_offset = c.size();
    for (int64_t j = 0; j < m.Cout; ++j) {
      int32_t bj = 0;
      if (bias) std::memcpy(&bj, bias + j, 4);
      put_i32(c, bj);
      put_i32(c, q->mult[size_t(j)].mult);
      put_i32(c, q->mult[size_t(j)].shift);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_memory_plan_pass() { return std::make_unique<MemoryPlanPass>(); }

}  // namespace loom::compiler
