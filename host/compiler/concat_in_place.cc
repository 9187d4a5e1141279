// Concat in place: an input of a concat that can live inside the concat's
// output buffer becomes a view of it (CompileState::tensor_view), so the
// layer producing it writes straight into its slice and the concat's copy of
// it is dropped. DenseNet's dense blocks (each layer's features concatenated
// to all before them, as a chain of two-input concats or as one concat of
// every feature so far per layer), Inception's and SqueezeNet's branches,
// and a class token put before a sequence are the cases.
//
// An input moves into the concat's buffer when
// - the concat's copy of it changes nothing: the same scale, zero point and
//   type as the output, and no clamp (the copy is then exact, so dropping it
//   is bit-exact with the reference);
// - it is an activation that is neither a graph input nor a graph output;
// - every layer writing it can write the slice: any layer when the slice is
//   contiguous (the concat's outer dims are 1); a conv/gemm/pool (pixel
//   pitch) or another concat's copies when it is a strided slice of the
//   channels;
// - every layer reading it can read the slice the same way: a conv/gemm's
//   activation, a pool's input or a concat copy for a strided slice; any
//   reader for a contiguous one.
// Concats are taken from the last to the first, so a concat whose output
// itself became a view places its inputs in the outermost buffer (views
// compose), and an input that an outer concat placed already at the very
// spot this concat would copy it to costs nothing either.
// Off under --fusion none, so its gain can be measured.
#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "compiler/pass.h"
#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

/// `in` (a view into a tensor t) in the frame of t's own view `outer`:
/// std::nullopt where the composition is no view (in's rows are not t's).
std::optional<TensorView> compose(const TensorView& in, const TensorView& outer) {
  if (outer.dense()) return TensorView{outer.base, in.width, in.pitch, outer.offset + in.offset};
  if (in.pitch == outer.width && in.offset + in.width <= outer.width)
    return TensorView{outer.base, in.width, outer.pitch, outer.offset + in.offset};
  return std::nullopt;
}

bool same_view(const TensorView& a, const TensorView& b) {
  return a.base == b.base && a.offset == b.offset && (a.dense() ? b.dense() : a.width == b.width && a.pitch == b.pitch);
}

class ConcatInPlacePass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"concat-in-place",
                            {PassOption::Fusion},
                            {{"inputs_in_place", "concat inputs placed as views of the concat's buffer"},
                             {"bytes_not_copied", "bytes those views do not copy"},
                             {"rescale_candidates", "requantized inputs proposed to tiling as rescale writes"},
                             {"inputs_copied", "concat inputs still copied"}}};
    return i;
  }

  Status run(CompileState& s) override {
    s.tensor_view.clear();
    if (s.fusion() == Fusion::None) return Status::ok();
    std::vector<size_t> concats;  // graph nodes, in layer order
    for (const auto& l : s.layers)
      if (l.part.on && (concats.empty() || concats.back() != l.node)) concats.push_back(l.node);
    std::set<std::pair<size_t, size_t>> free;  // (concat node, input) whose copy is dropped
    for (auto it = concats.rbegin(); it != concats.rend(); ++it) place_inputs(s, *it, free);
    std::vector<Layer> kept;
    for (auto& l : s.layers)
      if (!(l.part.on && free.count({l.node, l.part.input}))) kept.push_back(std::move(l));
    s.layers = std::move(kept);
    set_pitches(s);
    return Status::ok();
  }

 private:
  /// Where concat node `c`'s part `p` puts its input, in the frame of the
  /// concat's output.
  static TensorView slot(const std::string& y, const Layer::ConcatPart& p) {
    if (p.rows == 1 || p.width == p.pitch) return TensorView{y, p.width * p.rows, p.width * p.rows, p.offset};
    return TensorView{y, p.width, p.pitch, p.offset};
  }

  void place_inputs(CompileState& s, size_t c, std::set<std::pair<size_t, size_t>>& free) {
    const ir::Node& n = s.graph.nodes[c];
    const std::string& y = n.outputs[0];
    if (!s.tensor_view.count(y)) view_over_inputs(s, c);
    const auto yv = s.tensor_view.find(y);
    std::string placed, copied;
    for (const auto& l : s.layers) {
      if (!l.part.on || l.node != c) continue;
      const std::string& x = n.inputs[l.part.input];
      std::optional<TensorView> v = slot(y, l.part);
      if (yv != s.tensor_view.end()) v = compose(*v, yv->second);
      std::string why = !v ? "the output's own slice is strided across this input's rows" : movable(s, c, l, *v);
      if (why.empty()) {
        if (!s.tensor_view.count(x)) s.tensor_view[x] = *v;
        free.insert({c, l.part.input});
        placed += (placed.empty() ? "'" : ", '") + x + "'";
        bump("inputs_in_place");
        bump("bytes_not_copied", shape_numel(s.graph.tensor(x).shape));
      } else if (v && propose_rescale(s, c, l, *v)) {
        copied += (copied.empty() ? "" : "; ") + ("'" + x + "' " + why + " by its producer's post-op if faster");
        bump("rescale_candidates");
      } else {
        copied += (copied.empty() ? "" : "; ") + ("'" + x + "' copied: " + why);
        bump("inputs_copied");
      }
    }
    const std::string choice = copied.empty() ? "in place" : placed.empty() ? "copies" : "partly in place";
    s.decide(n.name, name(), choice,
             (placed.empty() ? std::string() : ": " + placed + " written in place by the layers producing them") +
                 (copied.empty() ? std::string() : (placed.empty() ? ": " : "; ") + copied));
  }

  /// Why the input that copy layer `part` of concat `c` copies cannot become
  /// view `v` ("" when it can, or already is exactly that view).
  static std::string movable(const CompileState& s, size_t c, const Layer& part, const TensorView& v) {
    const ir::Graph& g = s.graph;
    const ir::Node& n = g.nodes[c];
    const std::string& x = n.inputs[part.part.input];
    if (auto it = s.tensor_view.find(x); it != s.tensor_view.end())
      return same_view(it->second, v) ? "" : "it lives in another concat's buffer already";
    if (std::string why = unchanged_by_copy(s, n, part.part.input); !why.empty()) return why;
    if (std::count(n.inputs.begin(), n.inputs.end(), x) > 1) return "an input twice";
    return fits(s, x, v, &part);
  }

  /// Why concat `n`'s copy of input `k` changes it ("" when it does not).
  static std::string unchanged_by_copy(const CompileState& s, const ir::Node& n, size_t k) {
    const ir::TensorInfo& xt = s.graph.tensor(n.inputs[k]);
    const ir::TensorInfo& yt = s.graph.tensor(n.outputs[0]);
    if (dtype_size(xt.dtype) != 1 || xt.dtype != yt.dtype) return "not the output's int8 type";
    if (xt.q.scale != yt.q.scale || xt.q.zero_point != yt.q.zero_point) return "requantized to the output's scale";
    auto q = ir::concat_quant(s.graph, n, k);
    if (!q || q->lo > -128 || q->hi < 127) return "clamped by the concat";
    return "";
  }

  /// Why tensor `t` cannot live as view `v` ("" when every layer writing
  /// and reading it, `skip` aside, can do so there).
  static std::string fits(const CompileState& s, const std::string& t, const TensorView& v, const Layer* skip) {
    const ir::Graph& g = s.graph;
    const ir::TensorInfo& tt = g.tensor(t);
    if (tt.is_const) return "a constant";
    if (std::count(g.inputs.begin(), g.inputs.end(), t) || std::count(g.outputs.begin(), g.outputs.end(), t))
      return "a graph input or output";
    if (dtype_size(tt.dtype) != 1) return "not int8";
    int writers = 0;
    for (const auto& l : s.layers) {
      const ir::Node& ln = s.node(l);
      if (l.props->kind != LayerKind::Alias && l.out_tensor(g) == t) {
        ++writers;
        if (!writes_view(l, v)) return "its producer '" + l.name + "' cannot write a strided slice";
      } else if (l.props->kind == LayerKind::Alias && ln.outputs[0] == t) {
        return "an alias of '" + ln.inputs[0] + "'";
      }
      if (&l == skip) continue;
      for (size_t i = 0; i < ln.inputs.size(); ++i)
        if (ln.inputs[i] == t && !reads_view(l, i, v)) return "'" + l.name + "' cannot read it as a strided slice";
      if (l.res.candidate && l.res.tensor == t && !v.dense()) return "'" + l.name + "' reads it as a residual";
    }
    return writers > 0 ? "" : "no layer writes it";
  }

  /// A conv/gemm whose output only concat `c`'s copy `part` reads, and
  /// which the copy requantizes: proposed to write it into view `v`
  /// requantized by its POSTOP (Layer::Rescale; the tiling pass weighs it
  /// against the copy).
  static bool propose_rescale(CompileState& s, size_t c, const Layer& part, const TensorView& v) {
    const ir::Node& n = s.graph.nodes[c];
    const std::string& x = n.inputs[part.part.input];
    if (s.tensor_view.count(x) || std::count(n.inputs.begin(), n.inputs.end(), x) > 1) return false;
    const ir::TensorInfo &xt = s.graph.tensor(x), &yt = s.graph.tensor(n.outputs[0]);
    if (dtype_size(xt.dtype) != 1 || xt.dtype != yt.dtype) return false;
    Layer* mac = nullptr;
    for (auto& l : s.layers) {
      const ir::Node& ln = s.node(l);
      const bool reads = l.part.on ? ln.inputs[l.part.input] == x : std::count(ln.inputs.begin(), ln.inputs.end(), x);
      if (&l != &part && reads) return false;
      if (l.res.candidate && l.res.tensor == x) return false;
      if (l.props->kind == LayerKind::Mac && ln.outputs[0] == x) mac = &l;
    }
    if (!mac || mac->res.candidate || mac->rescale.candidate || !fits(s, x, v, &part).empty()) return false;
    auto q = ir::concat_quant(s.graph, n, part.part.input);
    if (!q) return false;
    Layer::Rescale& r = mac->rescale;
    r.candidate = true;
    r.concat = c, r.input = part.part.input, r.view = v;
    r.a_zp = q->a_zp, r.a_mult = q->a.mult, r.a_shift = q->a.shift;
    r.zp = q->y_zp, r.lo = q->lo, r.hi = q->hi;
    return true;
  }

  /// Concat `c` whose inputs an outer concat placed already, next to each
  /// other as this one would: its output becomes the view over them, so
  /// none of them is copied (DenseNet's concat of every feature so far, a
  /// prefix of the next layer's).
  static void view_over_inputs(CompileState& s, size_t c) {
    const ir::Node& n = s.graph.nodes[c];
    const std::string& y = n.outputs[0];
    std::optional<TensorView> v;
    std::vector<const Layer*> parts;
    for (const auto& l : s.layers)
      if (l.part.on && l.node == c) parts.push_back(&l);
    if (parts.empty()) return;
    for (const Layer* l : parts) {
      auto it = s.tensor_view.find(n.inputs[l->part.input]);
      if (it == s.tensor_view.end() || !unchanged_by_copy(s, n, l->part.input).empty()) return;
      const TensorView& x = it->second;
      const TensorView sl = slot(y, l->part);
      if (!v) {  // the output's view, from the first part
        if (sl.dense() != x.dense() || x.offset < sl.offset) return;
        const int64_t all = shape_numel(s.graph.tensor(y).shape);
        v = x.dense() ? TensorView{x.base, all, all, x.offset - sl.offset}
                      : TensorView{x.base, l->part.pitch, x.pitch, x.offset - sl.offset};
      }
      const auto at = compose(sl, *v);
      if (!at || !same_view(*at, x)) return;
    }
    if (!fits(s, y, *v, nullptr).empty()) return;
    s.tensor_view[y] = *v;
  }

  static bool writes_view(const Layer& l, const TensorView& v) {
    if (v.dense()) return true;
    switch (l.props->kind) {
      case LayerKind::Mac:
        return !l.res.candidate && v.width == l.mac.Cout;
      case LayerKind::Pool:
        return v.width == l.pool.C;
      case LayerKind::Eltwise:
        return l.part.on && v.width == l.part.pitch;
      case LayerKind::Alias:
        return false;
    }
    return false;
  }

  /// Whether layer `l` can read its input `i` as view `v`.
  static bool reads_view(const Layer& l, size_t i, const TensorView& v) {
    if (v.dense()) return true;
    switch (l.props->kind) {
      case LayerKind::Mac:
        return i == 0 && v.width == l.mac.C;
      case LayerKind::Pool:
        return i == 0 && v.width == l.pool.C;
      case LayerKind::Eltwise:
        return l.part.on && (i != l.part.input || v.width == l.part.width);
      case LayerKind::Alias:
        return false;
    }
    return false;
  }

  /// The strided views' pitches into the geometry of the layers reading and
  /// writing them.
  static void set_pitches(CompileState& s) {
    const auto pitch = [&](const std::string& t) -> int64_t {
      auto it = s.tensor_view.find(t);
      return it == s.tensor_view.end() || it->second.dense() ? 0 : it->second.pitch;
    };
    for (auto& l : s.layers) {
      const ir::Node& n = s.node(l);
      switch (l.props->kind) {
        case LayerKind::Mac:
          l.mac.xp = pitch(n.inputs[0]), l.mac.yp = pitch(n.outputs[0]);
          break;
        case LayerKind::Pool:
          l.pool.xp = pitch(n.inputs[0]), l.pool.yp = pitch(n.outputs[0]);
          break;
        case LayerKind::Eltwise:
          if (!l.part.on) break;
          l.part.in_pitch = pitch(n.inputs[l.part.input]);
          if (const int64_t p = pitch(n.outputs[0])) l.part.pitch = p;  // the output's rows in the outer buffer
          break;
        case LayerKind::Alias:
          break;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_concat_in_place_pass() { return std::make_unique<ConcatInPlacePass>(); }

}  // namespace loom::compiler
