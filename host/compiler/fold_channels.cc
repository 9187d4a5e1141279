// Channel maps as matrix products: data movement that, per pixel of an NHWC
// image, picks channels of the same pixel becomes one 1x1 convolution with a
// 0/1 selection matrix.
//
// ShuffleNet's channel shuffle and the split after it are such maps. As the
// importer writes them they are a chain of layout changes (NHWC -> ONNX
// order, a 5-D transpose, a slice of the channel planes, and back to NHWC
// for the next conv), and as one gather they read one byte a DMA row, since
// neighbouring output channels come from channels C/g apart. On the array
// the same map is a GEMM of the pixels [P, C] by a [C, C'] matrix with one 1
// a column: int8 weights 1 and 0 of scale 1 and zero point 0, no bias, and
// the input's quantization on the output, so the accumulator is x - zp
// exactly, the multiplier is exactly 1 (2^30 >> 30) and the result is the
// input byte: bit-exact with the moves it replaces. Its MACs are no work of
// the model (Attrs::moves_only): layer tables give it 0 MACs.
//
// For each tensor an op other than a data move reads (or a graph output),
// the pass walks back through transposes, reshapes, flattens and slices to
// the tensor they start from; when that is a 4-D image with the same
// pixels and the composed index map is, pixel by pixel, a choice of its
// channels, and the cost model predicts the GEMM faster than the moves'
// gathers, the tensor is computed by the 1x1 convolution instead (moves
// nobody reads any more are dropped). Where every reader of the tensor is a
// convolution and that costs less, the choice goes into their weights
// instead: they read the source with rows of the weight zero point for the
// channels left out, which add nothing (ShuffleNet's branch conv after the
// split); a permutation also passes through a depthwise conv (its weights,
// scales and bias permuted) into the convs reading its output (ShuffleNet's
// stride-2 units). Off under --fusion none.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
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

bool move_op(OpKind op) {
  return op == OpKind::Transpose || op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Slice;
}

constexpr int64_t kMaxElems = int64_t(1) << 24;  // the index map is built in memory

/// Tensor `from`'s channels sel[j], j = 0..C'-1.
struct Pick {
  std::string from;
  std::vector<int64_t> sel;
};

class FoldChannelsPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fold-channels",
                            {PassOption::Fusion, PassOption::CostParams},
                            {{"maps", "channel selections folded into 1x1 convolutions"},
                             {"folded_into_weights", "channel selections folded into the weights of their readers"},
                             {"kept", "channel selections kept as moves (cheaper)"}}};
    return i;
  }

  Status run(CompileState& s) override {
    if (s.fusion() == Fusion::None) return Status::ok();
    ir::Graph& g = s.graph;
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i) producer[g.nodes[i].outputs[0]] = i;
    // The tensors read by something other than a data move: where a map ends.
    std::vector<std::string> ends(g.outputs.begin(), g.outputs.end());
    for (const auto& n : g.nodes)
      if (!move_op(n.op))
        for (const auto& in : n.inputs)
          if (!in.empty()) ends.push_back(in);
    std::set<std::string> seen;
    std::map<size_t, std::vector<Node>> before;  // node index -> the selections to insert before it
    std::map<std::string, Pick> picks;           // selected tensors the convs reading them take into their weights
    const CostParams p = s.cost();
    for (const auto& e : ends) {
      if (!seen.insert(e).second || !producer.count(e) || !move_op(g.nodes[producer[e]].op)) continue;
      std::vector<size_t> path;
      std::string t = e;
      for (; producer.count(t) && move_op(g.nodes[producer[t]].op); t = g.nodes[producer[t]].inputs[0])
        path.insert(path.begin(), producer[t]);
      std::vector<int64_t> sel;
      if (!channel_map(g, t, e, path, &sel)) continue;
      const uint64_t moves = moves_cycles(g, p, path), gemm = gemm_cycles(s, p, g.tensor(t).shape, sel.size());
      if (gemm >= moves) {
        s.decide(e, name(), "kept the moves",
                 ": a channel map, predicted " + std::to_string(moves) + " cycles as gathers, " + std::to_string(gemm) +
                     " as a 1x1 convolution",
                 moves, {{"gemm", gemm}});
        bump("kept");
        continue;
      }
      // Into the weights of the convs reading it, when all of them are convs
      // and that costs less than the selection.
      if (auto extra = fold_cycles(s, g, e, sel, g.tensor(t).shape[3]); extra && *extra < gemm) {
        picks[e] = {t, sel};
        s.decide(e, name(), "into the weights of its readers",
                 ": picks " + std::to_string(sel.size()) + " of the " + std::to_string(g.tensor(t).shape[3]) +
                     " channels of '" + t + "' per pixel; its convs read '" + t +
                     "' with zero-point rows for the others, predicted " + std::to_string(*extra) +
                     " more cycles against " + std::to_string(gemm) + " for a 1x1 selection and " +
                     std::to_string(moves) + " for the moves",
                 *extra, {{"selection", gemm}, {"moves", moves}});
        bump("folded_into_weights");
        continue;
      }
      // Before the first node that reads e (the map's start is made before).
      size_t at = g.nodes.size();
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (std::count(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end(), e)) {
          at = i;
          break;
        }
      before[at].push_back(selection(g, t, e, sel));
      s.decide(e, name(), "one 1x1 convolution",
               ": picks " + std::to_string(sel.size()) + " of the " + std::to_string(g.tensor(t).shape[3]) +
                   " channels of '" + t + "' per pixel, predicted " + std::to_string(gemm) + " cycles against " +
                   std::to_string(moves) + " for the " + std::to_string(path.size()) + " moves",
               gemm, {{"moves", moves}});
      bump("maps");
    }
    if (before.empty() && picks.empty()) return Status::ok();
    for (auto& n : g.nodes) {
      if (n.op != OpKind::Conv2d || n.inputs.empty()) continue;
      auto it = picks.find(n.inputs[0]);
      if (it == picks.end()) continue;
      const Pick pick = it->second;  // permute_depthwise adds to picks
      if (n.attrs.groups == 1)
        pick_rows(g, n, pick);
      else
        permute_depthwise(g, n, pick, picks);
    }
    rebuild(g, before);
    return Status::ok();
  }

 private:
  /// Whether e (reached from t through `path`) is, pixel by pixel, a choice
  /// of t's channels; `sel` gets the channel of t each channel of e is.
  static bool channel_map(const ir::Graph& g, const std::string& t, const std::string& e,
                          const std::vector<size_t>& path, std::vector<int64_t>* sel) {
    const ir::TensorInfo &x = g.tensor(t), &y = g.tensor(e);
    if (x.shape.size() != 4 || y.shape.size() != 4 || x.is_const || x.dtype != DType::I8 || y.dtype != DType::I8)
      return false;
    if (x.q.scale != y.q.scale || x.q.zero_point != y.q.zero_point) return false;
    for (int d = 0; d < 3; ++d)
      if (x.shape[size_t(d)] != y.shape[size_t(d)]) return false;
    if (shape_numel(x.shape) > kMaxElems) return false;
    int moves = 0;
    for (size_t i : path) moves += g.nodes[i].op != OpKind::Reshape && g.nodes[i].op != OpKind::Flatten;
    if (moves == 0) return false;  // reshapes alone move nothing
    std::vector<int32_t> f(size_t(shape_numel(x.shape)));
    std::iota(f.begin(), f.end(), 0);
    for (size_t i : path) f = after_move(g, g.nodes[i], f);
    const int64_t C = x.shape[3], Cy = y.shape[3], P = shape_numel(x.shape) / C;
    sel->assign(size_t(Cy), 0);
    for (int64_t j = 0; j < Cy; ++j) (*sel)[size_t(j)] = f[size_t(j)];
    for (int64_t q = 0; q < P; ++q)
      for (int64_t j = 0; j < Cy; ++j)
        if (f[size_t(q * Cy + j)] != q * C + (*sel)[size_t(j)]) return false;
    for (int64_t c : *sel)
      if (c >= C) return false;
    return true;
  }

  /// The moves' predicted gather cycles (transposes and slices; reshapes are free).
  static uint64_t moves_cycles(const ir::Graph& g, const CostParams& p, const std::vector<size_t>& path) {
    uint64_t c = 0;
    for (size_t i : path) {
      const Node& n = g.nodes[i];
      const auto& x = g.tensor(n.inputs[0]).shape;
      const auto& y = g.tensor(n.outputs[0]).shape;
      if (n.op == OpKind::Transpose) c += gather_cycles(p, permute_of(x, n.attrs.perm), uint64_t(shape_numel(y)));
      if (n.op == OpKind::Slice) c += gather_cycles(p, slice_of(x, n.attrs.starts, y), uint64_t(shape_numel(y)));
    }
    return c;
  }

  /// The 1x1 convolution's cycles, roughly: its array passes spread over the
  /// cores, and its bytes read and written over the memory ports.
  static uint64_t gemm_cycles(const CompileState& s, const CostParams& p, const std::vector<int64_t>& x, size_t cy) {
    const uint64_t P = uint64_t(shape_numel(x) / x[3]), C = uint64_t(x[3]), rows = s.cfg->array_rows,
                   cols = s.cfg->array_cols, cores = uint64_t(std::max(s.cores, 1));
    const uint64_t passes = (P + rows - 1) / rows * ((uint64_t(cy) + cols - 1) / cols);
    const uint64_t compute = (passes * (C + rows) + cores - 1) / cores;
    const uint64_t bytes = P * (C + uint64_t(cy)) + C * uint64_t(cy);
    return compute + bytes / (p.mem_bytes * std::max<uint64_t>(p.ports, 1));
  }

  /// The cycles the convs reading `e` would add reading all of its source's
  /// channels instead (their extra array passes, roughly), or nothing when
  /// some reader is no conv of one group that reads e as its image, or e
  /// repeats a channel.
  static std::optional<uint64_t> fold_cycles(const CompileState& s, const ir::Graph& g, const std::string& e,
                                             const std::vector<int64_t>& sel, int64_t source_channels) {
    if (std::count(g.outputs.begin(), g.outputs.end(), e)) return std::nullopt;
    std::vector<int64_t> sorted = sel;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
    const uint64_t rows = s.cfg->array_rows, cols = s.cfg->array_cols, cores = uint64_t(std::max(s.cores, 1));
    uint64_t extra = 0;
    int readers = 0;
    for (const auto& n : g.nodes) {
      if (!std::count(n.inputs.begin(), n.inputs.end(), e)) continue;
      ++readers;
      if (int64_t(sel.size()) == source_channels && depthwise_through(g, n, e)) continue;  // a permutation: free
      if (n.op != OpKind::Conv2d || n.inputs[0] != e || n.attrs.groups != 1 || n.attrs.picked ||
          std::count(n.inputs.begin() + 1, n.inputs.end(), e))
        return std::nullopt;
      const ir::TensorInfo &w = g.tensor(n.inputs[1]), &y = g.tensor(n.outputs[0]);
      if (!w.is_const || w.dtype != DType::I8 || w.shape.size() != 4) return std::nullopt;
      const uint64_t P = uint64_t(shape_numel(y.shape) / y.shape[3]), M = uint64_t(y.shape[3]);
      extra += (P + rows - 1) / rows * ((M + cols - 1) / cols) * uint64_t(w.shape[0] * w.shape[1]) *
               uint64_t(source_channels - int64_t(sel.size()));
    }
    if (readers == 0) return std::nullopt;
    return (extra + cores - 1) / cores;
  }

  /// Whether `n` is a depthwise conv reading `e` as its image whose output
  /// only convs of one group read (as their image): a permutation of e's
  /// channels then passes through it into their weights.
  static bool depthwise_through(const ir::Graph& g, const Node& n, const std::string& e) {
    if (n.op != OpKind::Conv2d || n.inputs.size() < 2 || n.inputs[0] != e || n.attrs.picked) return false;
    const ir::TensorInfo& w = g.tensor(n.inputs[1]);
    const int64_t C = g.tensor(e).shape[3];
    if (n.attrs.groups != C || !w.is_const || w.dtype != DType::I8 ||
        w.shape != std::vector<int64_t>{w.shape[0], w.shape[1], 1, C})
      return false;
    if (w.q.scale.size() != 1 && int64_t(w.q.scale.size()) != C) return false;
    if (n.inputs.size() > 2 && !n.inputs[2].empty() && g.tensor(n.inputs[2]).data.numel() != C) return false;
    const std::string& o = n.outputs[0];
    if (std::count(g.outputs.begin(), g.outputs.end(), o)) return false;
    int readers = 0;
    for (const auto& r : g.nodes) {
      if (!std::count(r.inputs.begin(), r.inputs.end(), o)) continue;
      ++readers;
      if (r.op != OpKind::Conv2d || r.inputs[0] != o || r.attrs.groups != 1 || r.attrs.picked ||
          std::count(r.inputs.begin() + 1, r.inputs.end(), o) || !g.tensor(r.inputs[1]).is_const)
        return false;
    }
    return readers > 0;
  }

  /// Depthwise conv `n` reads pick `p`'s source (a permutation of its
  /// channels): its weights, weight scales and bias permuted the same way,
  /// so its output holds the channels in the source's order; its readers
  /// then take the permutation into their weights (`picks`).
  static void permute_depthwise(ir::Graph& g, Node& n, const Pick& p, std::map<std::string, Pick>& picks) {
    const ir::TensorInfo& w = g.tensor(n.inputs[1]);
    const int64_t taps = w.shape[0] * w.shape[1], C = w.shape[3];
    ir::TensorInfo x = w;
    x.name = n.name + ".w/permuted";
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < C; ++c) x.data.data[size_t(t * C + p.sel[size_t(c)])] = w.data.data[size_t(t * C + c)];
    if (w.q.scale.size() > 1)
      for (int64_t c = 0; c < C; ++c) x.q.scale[size_t(p.sel[size_t(c)])] = w.q.scale[size_t(c)];
    g.tensors[x.name] = x;
    n.inputs[1] = x.name;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const ir::TensorInfo& b = g.tensor(n.inputs[2]);
      ir::TensorInfo y = b;
      y.name = n.name + ".b/permuted";
      const size_t es = dtype_size(b.dtype);
      for (int64_t c = 0; c < C; ++c)
        std::copy_n(b.data.data.begin() + long(size_t(c) * es), es,
                    y.data.data.begin() + long(size_t(p.sel[size_t(c)]) * es));
      g.tensors[y.name] = y;
      n.inputs[2] = y.name;
    }
    n.inputs[0] = p.from;
    picks[n.outputs[0]] = Pick{n.outputs[0], p.sel};
  }

  /// Conv `n` reads pick `p`'s source with zero-point weight rows for the
  /// channels the pick leaves out.
  static void pick_rows(ir::Graph& g, Node& n, const Pick& p) {
    const ir::TensorInfo& w = g.tensor(n.inputs[1]);
    const int64_t KH = w.shape[0], KW = w.shape[1], Cy = w.shape[2], M = w.shape[3], C = g.tensor(p.from).shape[3];
    ir::TensorInfo x = w;
    x.name = n.name + ".w/picked";
    x.shape = {KH, KW, C, M};
    x.data = Tensor(DType::I8, x.shape);
    std::fill(x.data.data.begin(), x.data.data.end(), uint8_t(int8_t(w.q.zero_point)));
    const int8_t* src = w.data.i8();
    for (int64_t pos = 0; pos < KH * KW; ++pos)
      for (int64_t j = 0; j < Cy; ++j)
        for (int64_t m = 0; m < M; ++m)
          x.data.data[size_t((pos * C + p.sel[size_t(j)]) * M + m)] = uint8_t(src[(pos * Cy + j) * M + m]);
    g.tensors[x.name] = x;
    n.inputs[0] = p.from;
    n.inputs[1] = x.name;
    n.attrs.picked = Cy;
  }

  /// `e` := 1x1 convolution of `t` with the 0/1 matrix of `sel`.
  static Node selection(ir::Graph& g, const std::string& t, const std::string& e, const std::vector<int64_t>& sel) {
    const int64_t C = g.tensor(t).shape[3], Cy = int64_t(sel.size());
    ir::TensorInfo w;
    w.name = e + "/select";
    w.dtype = DType::I8;
    w.shape = {1, 1, C, Cy};
    w.is_const = true;
    w.q.scale = {1.0};
    w.q.zero_point = 0;
    w.data = Tensor(DType::I8, w.shape);
    for (int64_t j = 0; j < Cy; ++j) w.data.data[size_t(sel[size_t(j)] * Cy + j)] = 1;
    g.tensors[w.name] = w;
    Node n;
    n.name = e + "/select";
    n.op = OpKind::Conv2d;
    n.inputs = {t, w.name};
    n.outputs = {e};
    n.attrs.kernel_h = n.attrs.kernel_w = 1;
    n.attrs.stride_h = n.attrs.stride_w = 1;
    n.attrs.groups = 1;
    n.attrs.moves_only = true;
    return n;
  }

  /// The graph with each selection before its first reader, the old
  /// producers of the selected tensors gone, and moves nobody reads dropped.
  static void rebuild(ir::Graph& g, std::map<size_t, std::vector<Node>>& before) {
    std::set<std::string> made;
    for (const auto& [i, ns] : before)
      for (const auto& n : ns) made.insert(n.outputs[0]);
    std::vector<Node> nodes;
    for (size_t i = 0; i <= g.nodes.size(); ++i) {
      if (auto it = before.find(i); it != before.end())
        for (auto& n : it->second) nodes.push_back(std::move(n));
      if (i < g.nodes.size() && !made.count(g.nodes[i].outputs[0])) nodes.push_back(std::move(g.nodes[i]));
    }
    // Drop data moves whose output nothing reads (from the last back).
    const std::set<std::string> outs(g.outputs.begin(), g.outputs.end());
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> read(outs);
      for (const auto& n : nodes)
        for (const auto& in : n.inputs) read.insert(in);
      for (size_t i = nodes.size(); i-- > 0;)
        if (move_op(nodes[i].op) && !read.count(nodes[i].outputs[0])) {
          g.tensors.erase(nodes[i].outputs[0]);
          nodes.erase(nodes.begin() + long(i));
          changed = true;
        }
    }
    g.nodes = std::move(nodes);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_channels_pass() { return std::make_unique<FoldChannelsPass>(); }

}  // namespace loom::compiler
