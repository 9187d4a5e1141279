// Legalization: checks that every node is an op the fabric runs, in a form it
// runs, and turns nodes into layers with their convolution/pool geometry.
#include <string>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

Error node_error(const ir::Node& n, const std::string& what) { return make_error("node '" + n.name + "'", what); }

class LegalizePass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"legalize", {}, {{"ops.*", "nodes legalized, by op"}, {"layers", "layers"}}};
    return i;
  }

  Status run(CompileState& s) override {
    s.layers.clear();
    for (size_t i = 0; i < s.graph.nodes.size(); ++i) {
      const ir::Node& n = s.graph.nodes[i];
      Layer l;
      l.name = n.name;
      l.node = i;
      l.props = op_props(n.op);
      if (!l.props) return node_error(n, std::string("op '") + ir::op_name(n.op) + "' does not run on the fabric");
      LOOM_TRY(check(s.graph, n, l));
      bump(std::string("ops.") + l.props->name);
      if (n.op == ir::OpKind::Concat) {
        add_concat_parts(s, n, l);
        continue;
      }
      s.layers.push_back(std::move(l));
    }
    set("layers", int64_t(s.layers.size()));
    return Status::ok();
  }

 private:
  static Status check(const ir::Graph& g, const ir::Node& n, Layer& l) {
    if (n.outputs.size() != 1) return node_error(n, "expected exactly one output");
    for (const auto& t : n.inputs)
      if (!t.empty() && !g.tensors.count(t)) return node_error(n, "unknown input tensor '" + t + "'");
    if (!g.tensors.count(n.outputs[0])) return node_error(n, "unknown output tensor '" + n.outputs[0] + "'");
    const ir::TensorInfo& y = g.tensor(n.outputs[0]);
    if (l.props->kind != LayerKind::Alias && y.dtype != DType::I8) return node_error(n, "output must be int8");
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty()) continue;
      const bool is_bias = (l.props->kind == LayerKind::Mac && k == 2) || (n.op == ir::OpKind::LayerNorm && k == 1);
      const DType want = is_bias ? DType::I32 : DType::I8;
      if (g.tensor(n.inputs[k]).dtype != want) return node_error(n, "input '" + n.inputs[k] + "' has the wrong dtype");
    }
    switch (l.props->kind) {
      case LayerKind::Mac:
        return check_mac(g, n, l);
      case LayerKind::Pool:
        return check_pool(g, n, l);
      case LayerKind::Eltwise:
        l.elems = shape_numel(y.shape);
        if (n.op == ir::OpKind::Softmax || n.op == ir::OpKind::LayerNorm) {
          if (g.tensor(n.inputs[0]).is_const) return node_error(n, "normalizing a constant is not supported (fold it)");
          l.row = y.shape.back();
        }
        if (n.op == ir::OpKind::Lut && g.tensor(n.inputs[0]).is_const)
          return node_error(n, "lookup of a constant is not supported (fold it)");
        if (n.op == ir::OpKind::Transpose) {
          if (g.tensor(n.inputs[0]).is_const) return node_error(n, "transpose of a constant is not supported");
          l.permute = permute_of(g.tensor(n.inputs[0]).shape, n.attrs.perm);
        }
        if (n.op == ir::OpKind::Slice) {
          if (g.tensor(n.inputs[0]).is_const) return node_error(n, "slice of a constant is not supported (fold it)");
          l.permute = slice_of(g.tensor(n.inputs[0]).shape, n.attrs.starts, y.shape);
        }
        if ((n.op == ir::OpKind::Add || n.op == ir::OpKind::Mul) &&
            (n.inputs.size() != 2 || !ir::repeats_over(g.tensor(n.inputs[1]).shape, g.tensor(n.inputs[0]).shape)))
          return node_error(n,
                            std::string(ir::op_name(n.op)) + " needs b of a's shape or repeated over a's leading dims");
        if ((n.op == ir::OpKind::Add || n.op == ir::OpKind::Mul) &&
            g.tensor(n.inputs[1]).shape != g.tensor(n.inputs[0]).shape)
          l.repeat = shape_numel(g.tensor(n.inputs[1]).shape);
        return Status::ok();
      case LayerKind::Alias:
        if (g.tensor(n.inputs[0]).is_const) return node_error(n, "reshape of a constant is not supported");
        return Status::ok();
    }
    return Status::ok();
  }

  /// One layer per input of concat `n` (checked as `l`), named
  /// "<node>#<input>" when there are several.
  static void add_concat_parts(CompileState& s, const ir::Node& n, const Layer& l) {
    const auto& y = s.graph.tensor(n.outputs[0]).shape;
    const int64_t axis = n.attrs.axis;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < int64_t(y.size()); ++d) {
      if (d < axis) outer *= y[size_t(d)];
      if (d > axis) inner *= y[size_t(d)];
    }
    int64_t at = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      Layer p = l;
      if (n.inputs.size() > 1) p.name = n.name + "#" + std::to_string(k);
      p.part.on = true;
      p.part.input = k;
      p.part.rows = outer;
      p.part.width = s.graph.tensor(n.inputs[k]).shape[size_t(axis)] * inner;
      p.part.pitch = y[size_t(axis)] * inner;
      p.part.offset = at;
      p.elems = outer * p.part.width;
      at += p.part.width;
      s.layers.push_back(std::move(p));
    }
  }

  /// Batch folding (MacGeom::images) where the images meet without seams:
  /// output row r of image i reads input row r * sh of it, which is row
  /// (i * OH + r) * sh of the tall image when H == OH * sh. (Convolutions
  /// with seams are folded where the cost model finds it pays: tiling.cc.)
  static void fold_batch(MacGeom& m) {
    if (m.batch <= 1 || m.KW != 1 || m.pl != 0) return;
    if (const MacGeom f = folded(m); !f.seams()) m = f;
  }

  static Status check_mac(const ir::Graph& g, const ir::Node& n, Layer& l) {
    if (n.inputs.size() < 2) return node_error(n, "expected at least two inputs");
    const auto& x = g.tensor(n.inputs[0]);
    const auto& w = g.tensor(n.inputs[1]);
    const auto& y = g.tensor(n.outputs[0]);
    if (x.is_const) return node_error(n, "a constant activation input is not supported");
    if (n.inputs.size() > 2 && !n.inputs[2].empty() && !g.tensor(n.inputs[2]).is_const)
      return node_error(n, "bias must be a constant");
    MacGeom& m = l.mac;
    if (n.op == ir::OpKind::Conv2d) {
      if (x.shape.size() != 4 || w.shape.size() != 4 || y.shape.size() != 4)
        return node_error(n, "conv2d expects 4-D NHWC tensors");
      if (!w.is_const) return node_error(n, "conv2d weights must be constant");
      const auto& a = n.attrs;
      m.batch = x.shape[0], m.H = x.shape[1], m.W = x.shape[2], m.C = x.shape[3];
      m.OH = y.shape[1], m.OW = y.shape[2], m.Cout = y.shape[3];
      m.KH = w.shape[0], m.KW = w.shape[1];
      m.sh = a.stride_h, m.sw = a.stride_w, m.pt = a.pad_top, m.pl = a.pad_left;
      m.groups = a.groups;
      if (m.groups < 1 || m.C % m.groups || m.Cout % m.groups)
        return node_error(n, "groups must divide the channel counts");
      m.Cg = m.C / m.groups, m.Ng = m.Cout / m.groups;
      if (w.shape[2] != m.Cg || w.shape[3] != m.Cout) return node_error(n, "weight shape does not match the groups");
      if (m.KH != a.kernel_h || m.KW != a.kernel_w)
        return node_error(n, "kernel attributes do not match the weight shape");
      fold_batch(m);
    } else if (n.attrs.groups != 1) {
      // Grouped: a [M, G*K] times b [G, K, N] (or [G, N, K] with trans_b),
      // one group a GEMM group.
      if (x.shape.size() != 2 || w.shape.size() != 3 || y.shape.size() != 2)
        return node_error(n, "grouped gemm expects a [M,G*K], b [G,K,N]");
      const bool tb = n.attrs.trans_b;
      m.W = m.OW = x.shape[0];
      m.groups = w.shape[0];
      m.C = x.shape[1];
      m.Cg = w.shape[tb ? 2 : 1];
      m.Ng = w.shape[tb ? 1 : 2];
      m.Cout = m.groups * m.Ng;
      m.b_const = w.is_const;
      m.b_trans = tb && !w.is_const;  // a constant is packed untransposed (memory_plan)
      if (m.groups * m.Cg != m.C || y.shape[1] != m.Cout) return node_error(n, "grouped gemm shapes disagree");
    } else {
      if (x.shape.size() != 2 || w.shape.size() != 2 || y.shape.size() != 2)
        return node_error(n, "gemm expects 2-D tensors");
      const bool tb = n.attrs.trans_b;
      m.W = m.OW = x.shape[0];
      m.C = m.Cg = x.shape[1];
      m.Cout = m.Ng = w.shape[tb ? 0 : 1];
      m.b_const = w.is_const;
      m.b_trans = tb && !w.is_const;
      if (w.shape[tb ? 1 : 0] != m.C) return node_error(n, "gemm inner dimensions differ");
    }
    // A channel selection (fold-channels) moves data: no MACs of the model.
    // Rows of the zero point that fold-channels added do no work either.
    const int64_t k = n.attrs.picked ? m.KH * m.KW * n.attrs.picked : m.K();
    l.macs = n.attrs.moves_only ? 0 : uint64_t(m.batch * m.groups * m.M() * k * m.Ng);
    return Status::ok();
  }

  static Status check_pool(const ir::Graph& g, const ir::Node& n, Layer& l) {
    const auto& x = g.tensor(n.inputs[0]);
    const auto& y = g.tensor(n.outputs[0]);
    if (x.is_const) return node_error(n, "pooling a constant is not supported");
    if (x.shape.size() != 4 || y.shape.size() != 4) return node_error(n, "pooling expects 4-D NHWC tensors");
    PoolGeom& p = l.pool;
    const auto& a = n.attrs;
    p.batch = x.shape[0], p.H = x.shape[1], p.W = x.shape[2], p.C = x.shape[3];
    p.OH = y.shape[1], p.OW = y.shape[2];
    if (n.op == ir::OpKind::GlobalAvgPool) {
      p.KH = p.H, p.KW = p.W, p.global = true;
    } else {
      p.KH = a.kernel_h, p.KW = a.kernel_w, p.sh = a.stride_h, p.sw = a.stride_w, p.pt = a.pad_top, p.pl = a.pad_left;
      const bool padded = a.pad_top || a.pad_left || a.pad_bottom || a.pad_right;
      // One multiplier per layer: border windows that exclude padding would
      // need their own divisor.
      if (n.op == ir::OpKind::AvgPool && padded && !a.count_include_pad)
        return node_error(n, "avgpool with padding and count_include_pad=0 does not run on the fabric");
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_legalize_pass() { return std::make_unique<LegalizePass>(); }

}  // namespace loom::compiler
