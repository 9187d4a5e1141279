// Memory planning: lays out device memory relative to the plan base:
// constants (prepacked weights, PARAM tables, constant operands), then the
// activations, reusing a buffer once its last reader has run;
// reshape/flatten alias their input.
#include <cstring>
#include <iterator>
#include <map>
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
  const PassInfo& info() const override {
    static const PassInfo i{"memory-plan",
                            {},
                            {{"constant_bytes", "bytes of constants"},
                             {"activation_bytes", "bytes of activations, buffers reused"},
                             {"activation_bytes_without_reuse", "bytes of activations without reuse"},
                             {"memory_bytes", "bytes the plan takes"},
                             {"activation_buffers", "activation buffers"},
                             {"reused_buffers", "buffers that reuse a dead one's bytes"},
                             {"aliases", "tensors aliasing another's buffer"},
                             {"views", "tensors placed inside another's buffer"}}};
    return i;
  }

  Status run(CompileState& s) override {
    LOOM_TRY(place_constants(s));
    const uint64_t const_bytes = s.plan.constants.size();
    s.plan.constants_offset = 0;
    const uint64_t base = align_up(const_bytes, kAlign);
    Arena arena(base);
    place_activations(s, arena);
    const uint64_t top = arena.top;
    s.plan.memory_bytes = top;
    bind_io(s);
    set("constant_bytes", int64_t(const_bytes));
    set("activation_bytes", int64_t(top - base));
    set("activation_bytes_without_reuse", int64_t(arena.no_reuse - base));
    set("memory_bytes", int64_t(top));
    s.decide(s.graph.name, name(), s.reuse_buffers ? "liveness reuse" : "no reuse",
             ": constants " + std::to_string(const_bytes) + " B at 0, activations " + std::to_string(top - base) +
                 " B (" + std::to_string(arena.no_reuse - base) + " B without reuse), peak device memory " +
                 std::to_string(top) + " B");
    return Status::ok();
  }

 private:
  /// Activation memory above the constants: first fit over a list of free
  /// blocks, else the top grows (a free block ending at the top is extended).
  struct Arena {
    explicit Arena(uint64_t base) : top(base), no_reuse(base) {}
    uint64_t top, no_reuse;                    // no_reuse: the top without any reuse
    std::map<uint64_t, uint64_t> free_blocks;  // offset -> size

    /// An offset for `size` bytes; `reused` when it is not new memory.
    uint64_t take(uint64_t size, bool& reused) {
      no_reuse += size;
      reused = true;
      for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
        if (it->second >= size) {
          const uint64_t off = it->first;
          if (it->second > size) free_blocks.emplace(it->first + size, it->second - size);
          free_blocks.erase(it);
          return off;
        }
      if (!free_blocks.empty()) {
        auto last = std::prev(free_blocks.end());
        if (last->first + last->second == top) {
          const uint64_t off = last->first;
          top = off + size;
          free_blocks.erase(last);
          return off;
        }
      }
      reused = false;
      top += size;
      return top - size;
    }
    void release(uint64_t off, uint64_t size) {
      auto it = free_blocks.emplace(off, size).first;
      if (auto nx = std::next(it); nx != free_blocks.end() && it->first + it->second == nx->first) {
        it->second += nx->second;
        free_blocks.erase(nx);
      }
      if (it != free_blocks.begin()) {
        auto pv = std::prev(it);
        if (pv->first + pv->second == it->first) {
          pv->second += it->second;
          free_blocks.erase(it);
        }
      }
    }
  };

  /// The constants: every MAC layer's packed weights and PARAM table, the
  /// constant operands of element-wise layers and folded residual adds
  /// (once each), ROWNORM's PARAM.
  Status place_constants(CompileState& s) {
    auto& c = s.plan.constants;
    c.clear();
    s.tensor_offset.clear();
    const ir::Graph& g = s.graph;
    const auto place_constant = [&](const std::string& in) {
      const ir::TensorInfo& t = g.tensor(in);
      if (!t.is_const || s.tensor_offset.count(in)) return;
      c.resize(align_up(c.size(), kAlign));
      s.tensor_offset[in] = c.size();
      c.insert(c.end(), t.data.data.begin(), t.data.data.end());
    };
    for (auto& l : s.layers) {
      const ir::Node& n = s.node(l);
      if (l.props->kind == LayerKind::Mac) {
        LOOM_TRY(pack_mac(s, l, n));
        if (l.res.on) place_constant(l.res.tensor);
      } else if (l.props->kind == LayerKind::Eltwise) {
        for (const auto& in : n.inputs) place_constant(in);
        // ROWNORM's PARAM: layernorm's (b, g, sh) constant is the triple
        // layout already; softmax's table comes from the scales.
        if (n.op == ir::OpKind::LayerNorm) {
          l.param_offset = s.tensor_offset.at(n.inputs[1]);
        } else if (n.op == ir::OpKind::Softmax) {
          auto q = ir::row_quant(g, n);
          if (!q) return Status(q.error());
          c.resize(align_up(c.size(), kAlign));
          l.param_offset = c.size();
          for (uint16_t e : q->softmax.table) {
            c.push_back(uint8_t(e & 0xFF));
            c.push_back(uint8_t(e >> 8));
          }
        }
      }
    }
    return Status::ok();
  }

  static constexpr size_t kPinned = ~size_t(0);

  /// The tensor owning each buffer: a view's base (concat in place), an
  /// alias's input's owner.
  static std::map<std::string, std::string> alias_roots(const CompileState& s) {
    std::map<std::string, std::string> root;
    for (const auto& l : s.layers)
      if (l.props->kind == LayerKind::Alias) root[s.node(l).outputs[0]] = owner_of(s, root, s.node(l).inputs[0]);
    return root;
  }
  static std::string owner_of(const CompileState& s, const std::map<std::string, std::string>& root,
                              const std::string& t) {
    if (auto v = s.tensor_view.find(t); v != s.tensor_view.end()) return v->second.base;
    auto it = root.find(t);
    return it == root.end() ? t : it->second;
  }

  /// Each buffer owner's last reading layer; graph inputs and outputs are
  /// pinned (kPinned: never released).
  static std::map<std::string, size_t> last_uses(const CompileState& s,
                                                 const std::map<std::string, std::string>& root) {
    const ir::Graph& g = s.graph;
    std::map<std::string, size_t> last_use;
    for (const auto& t : g.inputs) last_use[owner_of(s, root, t)] = kPinned;
    for (const auto& t : g.outputs) last_use[owner_of(s, root, t)] = kPinned;
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const auto& l = s.layers[i];
      if (l.props->kind == LayerKind::Alias) continue;
      auto reads = s.node(l).inputs;
      if (l.res.on) reads.push_back(l.res.tensor);
      for (const auto& in : reads) {
        if (in.empty() || g.tensor(in).is_const) continue;
        auto& u = last_use[owner_of(s, root, in)];
        if (u != kPinned) u = i;
      }
    }
    return last_use;
  }

  /// Activations with liveness reuse: a buffer is free once the last layer
  /// reading it (through any alias) has run; layers are separated by
  /// barriers, so a later layer may overwrite it. Graph inputs and outputs
  /// keep their own buffers. A view's offset follows from its base's (set
  /// when the base is placed, before any alias of the view reads it).
  void place_activations(CompileState& s, Arena& arena) {
    const ir::Graph& g = s.graph;
    const auto root = alias_roots(s);
    const auto last_use = last_uses(s, root);
    std::map<std::string, uint64_t> size_of;
    const auto place = [&](const std::string& name) {
      if (s.tensor_offset.count(name)) return;
      const ir::TensorInfo& t = g.tensor(name);
      const uint64_t size = align_up(uint64_t(shape_numel(t.shape)) * dtype_size(t.dtype), kAlign);
      size_of[name] = size;
      bump("activation_buffers");
      bool reused = false;
      s.tensor_offset[name] = arena.take(size, reused);
      if (reused) bump("reused_buffers");
    };
    for (const auto& in : g.inputs) place(in);
    std::vector<std::string> live;  // owners placed so far and not yet released
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const auto& l = s.layers[i];
      const ir::Node& n = s.node(l);
      if (l.props->kind == LayerKind::Alias) {
        if (!s.tensor_offset.count(n.outputs[0])) {
          s.tensor_offset[n.outputs[0]] = s.tensor_offset.at(n.inputs[0]);
          bump("aliases");
        }
        continue;
      }
      // Buffers whose last reader ran before this layer (behind a barrier).
      for (auto it = live.begin(); it != live.end();) {
        auto u = last_use.find(*it);
        const bool dead = s.reuse_buffers && (u == last_use.end() || (u->second != kPinned && u->second < i));
        if (dead) {
          arena.release(s.tensor_offset.at(*it), size_of.at(*it));
          it = live.erase(it);
        } else {
          ++it;
        }
      }
      const std::string out = owner_of(s, root, l.out_tensor(g));
      if (s.tensor_offset.count(out)) continue;  // a concat's later parts, a view of a placed buffer
      place(out);
      for (const auto& [v, w] : s.tensor_view)
        if (w.base == out) {
          s.tensor_offset[v] = s.tensor_offset.at(out) + uint64_t(w.offset) * dtype_size(g.tensor(v).dtype);
          bump("views");
        }
      live.push_back(out);
    }
  }

  /// The plan's graph inputs and outputs at their offsets.
  static void bind_io(CompileState& s) {
    const ir::Graph& g = s.graph;
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
  }

  /// Weights as [group][K][Ng] so one 2-D LOAD fetches any K x n tile (in
  /// depthwise mode taps x channels), and the (bias, mult, shift) table of
  /// every output channel.
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
      const int64_t cg = m.Cg / m.pack, ng = m.Ng / m.pack;  // the graph's group
      if (int64_t(w.data.data.size()) != m.KH * m.KW * cg * m.Cout)
        return make_error("node '" + n.name + "'", "weight data has the wrong size");
      c.resize(align_up(c.size(), kAlign));
      l.wgt_offset = c.size();
      // Packed groups (MacGeom::pack): input channel ci and output channel j
      // of a packed group belong to graph groups ci / cg and j / ng; only
      // the diagonal blocks hold weights, the rest the zero point.
      const bool gemm_groups = n.op == ir::OpKind::Gemm && w.shape.size() == 3;  // b [G,K,N]: already the layout
      const bool gemm_t = n.op == ir::OpKind::Gemm && n.attrs.trans_b;           // b [G,N,K] or [N,K]: transposed here
      // Depthwise mode: the graph's [KH][KW][1][C] is DWCONV's taps x channels.
      if (l.tiling.depthwise) {
        c.insert(c.end(), reinterpret_cast<const uint8_t*>(wd),
                 reinterpret_cast<const uint8_t*>(wd) + m.KH * m.KW * m.Cout);
      } else {
        const size_t at = c.size();
        c.resize(at + size_t(m.groups * m.K() * m.Ng), uint8_t(int8_t(q->w_zp)));  // off-block entries: the zero point
        uint8_t* row = c.data() + at;
        for (int64_t g = 0; g < m.groups; ++g)
          for (int64_t k = 0; k < m.K(); ++k, row += m.Ng) {
            const int64_t pos = k / m.Cg, ci = k % m.Cg;
            const int64_t blk = ci / cg, gr = g * m.pack + blk, cl = ci % cg;  // the graph's group, its channel
            uint8_t* out = row + blk * ng;                                     // its block of ng output channels
            if (gemm_t) {
              for (int64_t jl = 0; jl < ng; ++jl) out[jl] = uint8_t(wd[(gr * ng + jl) * cg + cl]);
            } else {
              const int8_t* src = gemm_groups ? wd + (gr * cg + cl) * ng : wd + (pos * cg + cl) * m.Cout + gr * ng;
              std::memcpy(out, src, size_t(ng));
            }
          }
      }
      if (!l.unit_kernel.empty() && m.graph_groups() != 1) {  // --hls auto: the unit reads the graph's layout
        c.resize(align_up(c.size(), kAlign));
        l.unit_wgt_offset = c.size();
        for (int64_t i = 0; i < m.KH * m.KW * cg * m.Cout; ++i) c.push_back(uint8_t(wd[i]));
      }
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
    if (l.res.on) {  // POSTOP rescale's pair, loaded after each tile's triples
      put_i32(c, l.res.a_mult);
      put_i32(c, l.res.a_shift);
    } else if (l.rescale.on) {
      put_i32(c, l.rescale.a_mult);
      put_i32(c, l.rescale.a_shift);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_memory_plan_pass() { return std::make_unique<MemoryPlanPass>(); }

}  // namespace loom::compiler
