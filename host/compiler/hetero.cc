// Heterogeneous placement: the unit-call builder, the hls-placement pass
// (after placement: which layers, or which of their output pixels, go to an
// HLS unit) and the hls-calls pass (after codegen: the plan's unit calls
// with their offsets and their cuts in the core streams).
#include "compiler/hetero.h"

#include <algorithm>
#include <numeric>

#include "compiler/pass.h"
#include "ir/op_quant.h"
#include "loom_hls_latency.h"

namespace loom::compiler {
namespace {

/// Host-sequenced phase cost assumed per unit call: the cores drain at the
/// two cuts around the layer and refetch after them (an estimate, not
/// calibrated; docs in hls/README.md).
constexpr uint64_t kUnitCallCycles = 300;
/// HLS kernel limits (hls/README.md, "Interfaces").
constexpr int64_t kGemmMaxK = 4096, kConvMaxR = 4608;

Error node_error(const ir::Node& n, const std::string& what) { return make_error("node '" + n.name + "'", what); }

}  // namespace

Expected<runtime::UnitCall> unit_call_for_node(const ir::Graph& g, const ir::Node& n, const UnitOperands& at,
                                               uint32_t unit, int64_t row0) {
  runtime::UnitCall c;
  c.unit = unit;
  const auto& xs = g.tensor(n.inputs.at(0)).shape;
  const auto& ys = g.tensor(n.outputs.at(0)).shape;
  const auto& a = n.attrs;
  switch (n.op) {
    case ir::OpKind::Conv2d: {
      auto q = ir::mac_quant(g, n);
      if (!q) return Status(q.error()).context("node '" + n.name + "'");
      if (q->even) return node_error(n, "ties rounded to even do not run on a unit (its kernel rounds away from zero)");
      const int64_t H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2], M = ys[3];
      if (xs[0] != 1 && row0 != 0) return node_error(n, "a row range needs batch 1");
      if (row0 % OW != 0 || row0 < 0 || row0 > OH * OW) return node_error(n, "row range not on an output row");
      // Output rows [oh0, OH) read input rows from ih0 = oh0 * sh - pad_top.
      const int64_t oh0 = row0 / OW, ih0 = oh0 * a.stride_h - a.pad_top;
      const int64_t skip = std::max<int64_t>(ih0, 0);
      c.kernel = "loom_hls_conv";
      c.args = {int64_t(at.x) + skip * W * C,
                int64_t(at.w),
                int64_t(at.params),
                int64_t(at.y) + row0 * M,
                xs[0],
                H - skip,
                W,
                C,
                M,
                a.kernel_h,
                a.kernel_w,
                a.stride_h,
                a.stride_w,
                ih0 < 0 ? -ih0 : 0,
                a.pad_left,
                OH - oh0,
                OW,
                a.groups,
                q->x_zp,
                q->w_zp,
                q->y_zp,
                q->lo,
                q->hi};
      return c;
    }
    case ir::OpKind::Gemm: {
      auto q = ir::mac_quant(g, n);
      if (!q) return Status(q.error()).context("node '" + n.name + "'");
      if (q->even) return node_error(n, "ties rounded to even do not run on a unit (its kernel rounds away from zero)");
      const int64_t M = xs[0], K = xs[1], N = ys[1];
      if (row0 < 0 || row0 > M) return node_error(n, "row range outside the output");
      c.kernel = "loom_hls_gemm";
      c.args = {int64_t(at.x) + row0 * K,
                int64_t(at.w),
                int64_t(at.params),
                int64_t(at.y) + row0 * N,
                M - row0,
                N,
                K,
                q->x_zp,
                q->w_zp,
                q->y_zp,
                q->lo,
                q->hi};
      return c;
    }
    case ir::OpKind::MaxPool:
    case ir::OpKind::AvgPool:
    case ir::OpKind::GlobalAvgPool: {
      if (row0 != 0) return node_error(n, "pooling runs on a unit whole");
      auto q = ir::pool_quant(g, n);
      if (!q) return Status(q.error()).context("node '" + n.name + "'");
      const bool global = n.op == ir::OpKind::GlobalAvgPool;
      const bool padded = a.pad_top || a.pad_left || a.pad_bottom || a.pad_right;
      if (n.op == ir::OpKind::AvgPool && padded && !a.count_include_pad)
        return node_error(n, "avgpool with padding and count_include_pad=0 does not run on a unit");
      c.kernel = "loom_hls_pool";
      c.args = {int64_t(at.x),
                int64_t(at.y),
                xs[0],
                xs[1],
                xs[2],
                xs[3],
                global ? xs[1] : a.kernel_h,
                global ? xs[2] : a.kernel_w,
                global ? 1 : a.stride_h,
                global ? 1 : a.stride_w,
                global ? 0 : a.pad_top,
                global ? 0 : a.pad_left,
                ys[1],
                ys[2],
                n.op != ir::OpKind::MaxPool,
                q->x_zp,
                q->y_zp,
                q->avg.mult,
                q->avg.shift,
                q->lo,
                q->hi};
      return c;
    }
    case ir::OpKind::Add:
    case ir::OpKind::Relu:
    case ir::OpKind::Clip: {
      if (row0 != 0) return node_error(n, "elementwise ops run on a unit whole");
      if (n.op == ir::OpKind::Add && g.tensor(n.inputs[1]).shape != g.tensor(n.inputs[0]).shape)
        return node_error(n, "the eltwise unit adds operands of one shape (b repeats here)");
      auto q = ir::elt_quant(g, n);
      if (!q) return Status(q.error()).context("node '" + n.name + "'");
      const bool binary = n.op == ir::OpKind::Add;
      c.kernel = "loom_hls_eltwise";
      c.args = {int64_t(at.x),  int64_t(binary ? at.w : at.x),
                int64_t(at.y),  shape_numel(ys),
                binary ? 1 : 0, q->a_zp,
                q->b_zp,        q->y_zp,
                q->a.mult,      q->a.shift,
                q->b.mult,      q->b.shift,
                q->lo,          q->hi};
      return c;
    }
    default:
      return node_error(n, std::string("no HLS unit runs ") + std::string(ir::op_name(n.op)));
  }
}

}  // namespace loom::compiler

// ---- --hls off|auto ----
namespace loom::compiler {

const char* hls_name(Hls h) { return h == Hls::Auto ? "auto" : "off"; }

Expected<Hls> parse_hls(const std::string& s) {
  for (Hls h : {Hls::Off, Hls::Auto})
    if (s == hls_name(h)) return h;
  return make_error("--hls", "unknown mode '" + s + "' (off or auto)");
}

namespace {

uint64_t unit_latency(const MacGeom& m, bool conv, int64_t rows) {
  if (rows <= 0) return 0;
  if (!conv) return loom_hls::gemm_cycles(uint64_t(rows), uint64_t(m.Cout), uint64_t(m.K()));
  return loom_hls::conv_cycles(1, uint64_t(rows / m.OW), uint64_t(m.OW), uint64_t(m.C), uint64_t(m.Cout),
                               uint64_t(m.KH), uint64_t(m.KW), uint64_t(m.graph_groups()));
}

/// Predicted cycles of a split: the executor (runtime/executor.cc,
/// UnitPhases) starts the call and keeps refilling the cores' rings with
/// their share while the unit runs (a timed device returns to the host when
/// the cores drain their rings, as a board's host sees RING_HEAD), then waits
/// for the call: the cores' share and the unit overlap.
uint64_t split_cycles(const Cost& cores, uint64_t unit) { return std::max(unit, cores.cycles); }

/// Pooling and elementwise layers go to their unit whole (the tops take no
/// pixel range) when its latency model plus the call beats the cores.
bool place_whole(CompileState& s, Layer& l, std::string_view pass) {
  const ir::Node& n = s.node(l);
  const bool pool = l.props->kind == LayerKind::Pool;
  const uint32_t units = pool ? s.cfg->hls_pool_units : s.cfg->hls_eltwise_units;
  std::string why;
  if (units == 0) why = std::string("configuration has no ") + (pool ? "pool" : "eltwise") + " unit";
  if (why.empty() && (l.pool.xp || l.pool.yp || l.part.in_pitch))
    why = "input or output inside a concat's buffer (the units read and write dense tensors)";
  auto call = unit_call_for_node(s.graph, n, UnitOperands{});
  if (why.empty() && !call) why = call.error().what;
  for (const auto& in : n.inputs)
    if (why.empty() && s.graph.tensor(in).is_const) why = "operand '" + in + "' is a constant, not an activation";
  if (!why.empty()) {
    s.decide(l.name, pass, "cores", ": " + why);
    return false;
  }
  uint64_t unit = 0;
  if (pool) {
    const PoolGeom& g = l.pool;
    unit = loom_hls::pool_cycles(uint64_t(g.batch), uint64_t(g.OH), uint64_t(g.OW), uint64_t(g.C),
                                 uint64_t(g.global ? g.H : g.KH), uint64_t(g.global ? g.W : g.KW));
  } else {
    unit = loom_hls::eltwise_cycles(uint64_t(l.elems));
  }
  const uint64_t t = unit + kUnitCallCycles;
  const std::string nums = "cores " + std::to_string(l.cost.cycles) + " cycles, " + call->kernel + " " +
                           std::to_string(unit) + " + " + std::to_string(kUnitCallCycles) + " per call";
  if (t >= l.cost.cycles) {
    s.decide(l.name, pass, "cores", ": " + nums, l.cost.cycles, {{call->kernel, t}});
    return false;
  }
  const uint64_t cores_cycles = l.cost.cycles;
  l.unit_kernel = call->kernel;
  l.unit_row0 = 0;
  l.unit_cycles = unit;
  l.tiles.clear();
  l.core_of_tile.clear();
  l.cost.cycles = t;
  s.decide(l.name, pass, "unit: whole layer on " + l.unit_kernel, "; " + nums, t, {{"cores", cores_cycles}});
  return true;
}

class HlsPlacementPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"hls-placement",
                            {PassOption::Hls, PassOption::Placement, PassOption::CostParams},
                            {{"layers_on_unit", "layers wholly on an HLS unit"},
                             {"layers_split", "layers split between the cores and a unit"}}};
    return i;
  }

  Status run(CompileState& s) override {
    if (s.hls() == Hls::Off) return Status::ok();
    if (s.placement() != Placement::Static)
      return make_error("--hls auto", std::string("HLS units are placed with --placement static only, not ") +
                                          placement_name(s.placement()));
    const CostParams cp = s.cost();
    for (auto& l : s.layers) {
      if (l.props->kind == LayerKind::Pool || l.props->kind == LayerKind::Eltwise) {
        if (place_whole(s, l, name())) bump("layers_on_unit");
        continue;
      }
      if (l.props->kind != LayerKind::Mac) continue;
      const ir::Node& n = s.node(l);
      const MacGeom& m = l.mac;
      const bool conv = n.op == ir::OpKind::Conv2d;
      const uint32_t units = conv ? s.cfg->hls_conv_units : s.cfg->hls_gemm_units;
      std::string why;
      if (units == 0)
        why = std::string("configuration has no ") + (conv ? "conv" : "gemm") + " unit";
      else if (m.batch != 1 || m.seams())
        why = "batch " + std::to_string(m.batch * m.images) + " (units take batch-1 layers)";
      else if (!m.b_const)
        why = "gemm of two activations";
      else if (!conv && m.groups != 1)
        why = "grouped gemm (the gemm unit takes one group)";
      else if (l.res.on)
        why = "residual add folded into its post-op";
      else if (m.xp || m.yp || l.rescale.on)
        why = "input or output inside a concat's buffer (the units read and write dense tensors)";
      else if (!conv && m.K() > kGemmMaxK)
        why = "K " + std::to_string(m.K()) + " over the gemm unit's 4096";
      else if (conv && m.K() > kConvMaxR)
        why = "KH*KW*C " + std::to_string(m.K()) + " over the conv unit's 4608";
      if (!why.empty()) {
        s.decide(l.name, name(), "cores", ": " + why);
        continue;
      }
      const int64_t M = m.M();
      const int64_t step = conv ? std::lcm(l.tiling.tm, m.OW) : l.tiling.tm;
      struct Choice {
        int64_t row0;
        uint64_t cycles, core, unit;
      };
      Choice best{M, l.cost.cycles, l.cost.cycles, 0};
      const int64_t nsteps = M / step;  // candidate splits row0 = i * step < M
      const int64_t stride = std::max<int64_t>(1, nsteps / 64);
      for (int64_t i = 0; i * step < M; i += (i == 0 ? 1 : stride)) {
        const int64_t row0 = i * step;
        uint64_t core = 0, t = 0;
        const uint64_t unit = unit_latency(m, conv, M - row0);
        if (row0 > 0) {
          Layer part = l;
          if (conv)
            part.mac.OH = row0 / m.OW;
          else
            part.mac.W = part.mac.OW = row0;
          const Cost c = estimate(cp, part, s.cores, s.budget.slots, false);
          core = c.cycles;
          t = split_cycles(c, unit) + kUnitCallCycles;
        } else {
          t = unit + kUnitCallCycles;
        }
        if (t < best.cycles) best = {row0, t, core, unit};
      }
      const std::string nums = "cores alone " + std::to_string(l.cost.cycles) + " cycles, " + (conv ? "conv" : "gemm") +
                               " unit alone " + std::to_string(unit_latency(m, conv, M) + kUnitCallCycles) +
                               " (latency model + " + std::to_string(kUnitCallCycles) + " per call)";
      if (best.row0 == M) {
        s.decide(l.name, name(), "cores", ": " + nums, l.cost.cycles);
        continue;
      }
      const uint64_t cores_alone = l.cost.cycles;
      l.unit_kernel = conv ? "loom_hls_conv" : "loom_hls_gemm";
      l.unit_row0 = best.row0;
      l.unit_cycles = best.unit;
      // The cores keep the tiles of rows [0, row0), round-robin again.
      std::vector<Tile> kept;
      for (const Tile& t : l.tiles)
        if (t.m0 < best.row0) kept.push_back(t);
      l.tiles = std::move(kept);
      l.core_of_tile.assign(l.tiles.size(), 0);
      for (size_t i = 0; i < l.tiles.size(); ++i) l.core_of_tile[i] = int(i % size_t(s.cores));
      l.cost.cycles = best.cycles;
      bump(best.row0 == 0 ? "layers_on_unit" : "layers_split");
      s.decide(l.name, name(),
               (best.row0 == 0 ? "unit: rows [0, " : "split: rows [0, ") + std::to_string(best.row0) + ") of " +
                   std::to_string(M) + " on the cores",
               " (" + std::to_string(best.core) + " cycles), [" + std::to_string(best.row0) + ", " + std::to_string(M) +
                   ") on " + l.unit_kernel + " (" + std::to_string(best.unit) + ")" +
                   (best.row0 > 0 ? ", side by side" : "") + "; predicted " + std::to_string(best.cycles) +
                   " with the call; " + nums,
               best.cycles, {{"cores", cores_alone}});
    }
    return Status::ok();
  }
};

class HlsCallsPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"hls-calls", {}, {{"calls", "HLS unit calls emitted"}}};
    return i;
  }

  Status run(CompileState& s) override {
    s.plan.unit_calls.clear();
    size_t k = 0;  // index into plan.layers (emitting layers)
    for (const auto& l : s.layers) {
      if (l.props->kind == LayerKind::Alias) continue;
      const size_t li = k++;
      if (l.unit_kernel.empty()) continue;
      const ir::Node& n = s.node(l);
      UnitOperands at;
      at.x = s.tensor_offset.at(n.inputs[0]);
      if (l.props->kind != LayerKind::Eltwise) {
        at.w = s.plan.constants_offset + (l.mac.graph_groups() != 1 ? l.unit_wgt_offset : l.wgt_offset);
      } else if (n.inputs.size() < 2) {
        at.w = at.x;  // unary: b is not read
      } else {
        auto it = s.tensor_offset.find(n.inputs[1]);
        if (it == s.tensor_offset.end())
          return make_error("node '" + l.name + "'", "operand '" + n.inputs[1] + "' has no device offset");
        at.w = it->second;
      }
      at.params = s.plan.constants_offset + l.param_offset;
      at.y = s.tensor_offset.at(l.out_tensor(s.graph));
      auto call = unit_call_for_node(s.graph, n, at, 0, l.unit_row0);
      if (!call) return call.error();
      if (call->kernel != l.unit_kernel) return make_error("node '" + l.name + "'", "unit kernel changed");
      plan::UnitCallInfo u;
      u.layer = uint32_t(li);
      u.kernel = call->kernel;
      u.unit = call->unit;
      // The tops' pointer arguments come first: x, w, params, y (conv, gemm),
      // a, b, y (eltwise), x, y (pool).
      u.ptr_args = call->kernel == "loom_hls_pool" ? 2 : call->kernel == "loom_hls_eltwise" ? 3 : 4;
      u.args = call->args;
      u.start_at = s.plan.layers[li].insn_begin;
      for (size_t c = 0; c < s.plan.cores.size(); ++c)
        u.wait_at.push_back(li + 1 < s.plan.layers.size() ? s.plan.layers[li + 1].insn_begin[c]
                                                          : uint32_t(s.plan.cores[c].size() - 1));  // before END
      u.cycles = l.unit_cycles;
      s.plan.unit_calls.push_back(std::move(u));
      bump("calls");
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_hls_placement_pass() { return std::make_unique<HlsPlacementPass>(); }
std::unique_ptr<Pass> make_hls_calls_pass() { return std::make_unique<HlsCallsPass>(); }

}  // namespace loom::compiler
