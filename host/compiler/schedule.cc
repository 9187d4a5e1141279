// Streams of the pipeline and dynamic placements: the stage synchronisation
// and the tile tasks with their dependencies (docs/compiler.md, "Placement").
#include "compiler/schedule.h"

#include <algorithm>
#include <string>

#include "compiler/lower.h"

namespace loom::compiler {
namespace {

/// Lowers the tiles of `l` whose core_of_tile is `slot` and checks every
/// field; `where` names the stream in errors.
Status lower_checked(const CompileState& s, const Layer& l, int slot, std::vector<AnyInsn>& out,
                     const std::string& where) {
  const size_t begin = out.size();
  LOOM_TRY(lower_layer(s, l, slot, out));
  for (size_t i = begin; i < out.size(); ++i) {
    const std::string_view bad = invalid_field(out[i]);
    if (!bad.empty())
      return make_error("node '" + l.name + "'", "instruction field '" + std::string(bad) +
                                                     "' does not fit this shape (" + where + ", instruction " +
                                                     std::to_string(i) + ")");
  }
  return Status::ok();
}

plan::LayerInfo layer_info(const Layer& l, size_t ncores) {
  plan::LayerInfo info;
  info.name = l.name;
  info.op = l.props->name;
  info.macs = l.macs;
  info.bytes_read = l.tiling.bytes_read;
  info.bytes_written = l.tiling.bytes_written;
  info.insn_begin.assign(ncores, 0);
  info.insn_end.assign(ncores, 0);
  return info;
}

spec::SemSignalInsn signal(uint64_t sem) {
  spec::SemSignalInsn i;
  i.sem_id = sem;
  return i;
}
spec::SemWaitInsn wait(uint64_t sem, uint64_t count) {
  spec::SemWaitInsn i;
  i.sem_id = sem;
  i.count = count;
  return i;
}

// ---- byte ranges of a tile (dynamic dependencies) ----

/// [lo, hi) device offsets relative to the plan base.
struct Span {
  uint64_t lo = 0, hi = 0;
};
using Spans = std::vector<Span>;

void merge(Spans& v) {
  std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  Spans out;
  for (const Span& x : v)
    if (!out.empty() && x.lo <= out.back().hi)
      out.back().hi = std::max(out.back().hi, x.hi);
    else
      out.push_back(x);
  v = std::move(out);
}

bool overlap(const Spans& a, const Spans& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].hi <= b[j].lo)
      ++i;
    else if (b[j].hi <= a[i].lo)
      ++j;
    else
      return true;
  }
  return false;
}

/// What one tile reads and writes in device memory (activations only:
/// constants are never written). Conservative: an input is read over whole
/// rows of the image, an output written over whole pixels.
struct TileSpans {
  const CompileState& s;

  bool activation(const std::string& t) const { return !t.empty() && !s.graph.tensor(t).is_const; }
  uint64_t esize(const std::string& t) const { return dtype_size(s.graph.tensor(t).dtype); }
  uint64_t off(const std::string& t) const { return s.tensor_offset.at(t); }
  void whole(const std::string& t, Spans& v) const { elems(t, 0, shape_numel(s.graph.tensor(t).shape), v); }
  /// Elements [e0, e1) of tensor t: of a view, the span of its base from
  /// the first to the last of them.
  void elems(const std::string& t, int64_t e0, int64_t e1, Spans& v) const {
    if (!activation(t) || e1 <= e0) return;
    if (auto it = s.tensor_view.find(t); it != s.tensor_view.end()) {
      const TensorView& w = it->second;
      const uint64_t base = off(w.base);
      v.push_back({base + uint64_t(w.elem(e0)) * esize(t), base + uint64_t(w.elem(e1 - 1) + 1) * esize(t)});
      return;
    }
    v.push_back({off(t) + uint64_t(e0) * esize(t), off(t) + uint64_t(e1) * esize(t)});
  }
  /// Input rows that output pixels [m0, m0+m) of a window operation need,
  /// counted from image `img`'s first pixel, H x W input and OH x OW output
  /// pixels an image: pixels past the first image's belong to the next ones
  /// (a folded batch, MacGeom::images), each reading its own image's rows.
  void rows(const std::string& t, int64_t img, int64_t H, int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t sh,
            int64_t pt, int64_t KH, int64_t m0, int64_t m, Spans& v) const {
    const int64_t M = OH * OW;
    for (int64_t p = m0; p < m0 + m;) {
      const int64_t i = p / M, end = std::min(m0 + m, (i + 1) * M);
      const int64_t oh0 = (p - i * M) / OW, oh1 = (end - 1 - i * M) / OW;
      const int64_t ih0 = std::max<int64_t>(0, oh0 * sh - pt), ih1 = std::min(H - 1, oh1 * sh - pt + KH - 1);
      if (ih0 <= ih1) elems(t, ((img + i) * H + ih0) * W * C, ((img + i) * H + ih1 + 1) * W * C, v);
      p = end;
    }
  }

  void operator()(const Layer& l, const Tile& t, Spans& rd, Spans& wr) const {
    const ir::Node& n = s.node(l);
    const std::string& out = l.out_tensor(s.graph);
    switch (l.props->kind) {
      case LayerKind::Mac: {
        const MacGeom& g = l.mac;
        if (l.props->op == ir::OpKind::Gemm)
          elems(n.inputs[0], t.m0 * g.C, (t.m0 + t.m) * g.C, rd);
        else
          rows(n.inputs[0], t.img, g.img_h(), g.W, g.C, g.img_oh(), g.OW, g.sh, g.pt, g.KH, t.m0, t.m, rd);
        if (n.inputs.size() > 1) whole(n.inputs[1], rd);  // gemm of two activations
        const int64_t p0 = t.img * g.M() + t.m0;
        if (l.res.on && l.res.row) whole(l.res.tensor, rd);
        if (l.res.on && !l.res.row) elems(l.res.tensor, p0 * g.Cout, (p0 + t.m) * g.Cout, rd);
        elems(out, p0 * g.Cout, (p0 + t.m) * g.Cout, wr);
        break;
      }
      case LayerKind::Pool: {
        const PoolGeom& g = l.pool;
        if (g.global)
          elems(n.inputs[0], t.img * g.H * g.W * g.C, (t.img + 1) * g.H * g.W * g.C, rd);
        else
          rows(n.inputs[0], t.img, g.H, g.W, g.C, g.OH, g.OW, g.sh, g.pt, g.KH, t.m0, t.m, rd);
        const int64_t p0 = t.img * g.OH * g.OW + t.m0;
        elems(out, p0 * g.C, (p0 + t.m) * g.C, wr);
        break;
      }
      case LayerKind::Eltwise:
        for (const auto& in : n.inputs) {
          if (!activation(in)) continue;
          if (shape_numel(s.graph.tensor(in).shape) == l.elems && !l.permute.on())
            elems(in, t.m0, t.m0 + t.m, rd);
          else
            whole(in, rd);
        }
        if (l.part.on)  // rows of its slice: the span from the first to the last element written
          elems(out, l.part.out_elem(t.m0), l.part.out_elem(t.m0 + t.m - 1) + 1, wr);
        else
          elems(out, t.m0, t.m0 + t.m, wr);
        break;
      case LayerKind::Alias:
        break;
    }
  }
};

}  // namespace

Status emit_pipeline(CompileState& s, std::vector<std::vector<AnyInsn>>& streams) {
  const size_t ncores = streams.size();
  const uint64_t S = s.stages.size(), U = uint64_t(s.units);
  if (2 * S > s.cfg->semaphores) return make_error("placement", "pipeline needs more semaphores than the config has");
  std::vector<size_t> info_of(s.layers.size(), 0);
  for (size_t i = 0; i < s.layers.size(); ++i)
    if (s.layers[i].props->kind != LayerKind::Alias) {
      info_of[i] = s.plan.layers.size();
      s.plan.layers.push_back(layer_info(s.layers[i], ncores));
    }
  for (uint64_t k = 0; k < S; ++k) {
    const Stage& st = s.stages[k];
    const uint64_t gs = st.cores.size();
    std::vector<size_t> layers;
    for (size_t i = st.first; i <= st.last; ++i)
      if (s.layers[i].props->kind != LayerKind::Alias) layers.push_back(i);
    for (uint64_t ci = 0; ci < gs; ++ci) {
      const int core = st.cores[ci];
      auto& out = streams[size_t(core)];
      uint64_t barriers = 0;
      for (uint64_t u = 0; u < U; ++u) {
        // Unit u of the previous stage (and so of every earlier one) is done.
        if (k > 0) out.push_back(wait(2 * (k - 1) + 1, u + 1));
        for (size_t li : layers) {
          const Layer& l = s.layers[li];
          const size_t b = out.size();
          LOOM_TRY(lower_checked(s, l, int(u * gs + ci), out, "core " + std::to_string(core)));
          auto& info = s.plan.layers[info_of[li]];
          if (u == 0) info.insn_begin[size_t(core)] = uint32_t(b);
          info.insn_end[size_t(core)] = uint32_t(out.size());
          // The stage's cores finish the layer (and its STOREs) before any
          // of them reads it; with one core a FENCE orders it.
          if (gs > 1) {
            out.push_back(signal(2 * k));
            out.push_back(wait(2 * k, gs * ++barriers));
          } else {
            out.push_back(spec::FenceInsn{});
          }
        }
        if (k + 1 < S && ci == 0) out.push_back(signal(2 * k + 1));
      }
    }
  }
  s.plan.semaphores_used = uint32_t(2 * S);
  return Status::ok();
}

Status emit_tasks(CompileState& s, std::vector<std::vector<AnyInsn>>& streams) {
  const size_t ncores = streams.size();
  if (ncores > s.cfg->semaphores) return make_error("placement", "dynamic needs one semaphore per core");
  auto& pool = streams[0];
  const TileSpans spans{s};
  std::vector<Spans> reads, writes;
  std::vector<std::vector<uint64_t>> ancestors;  // bit sets over earlier tasks
  std::vector<size_t> layer_first;               // first task of each plan layer
  for (const auto& l : s.layers) {
    if (l.props->kind == LayerKind::Alias) continue;
    const uint32_t li = uint32_t(s.plan.layers.size());
    plan::LayerInfo info = layer_info(l, ncores);
    info.insn_begin[0] = uint32_t(pool.size());
    const size_t first = s.plan.tasks.size();
    layer_first.push_back(first);
    const int T = l.slots_of_tiles;
    const uint64_t share = l.cost.cycles * uint64_t(std::min(T, s.cores)) / uint64_t(std::max(T, 1));
    for (int j = 0; j < T; ++j) {
      plan::Task t;
      t.begin = uint32_t(pool.size());
      LOOM_TRY(lower_checked(s, l, j, pool, "task " + std::to_string(s.plan.tasks.size())));
      pool.push_back(spec::FenceInsn{});
      t.end = uint32_t(pool.size());
      t.layer = li;
      t.port = uint32_t(l.task_port[size_t(j)]);
      t.cycles = share;
      Spans rd, wr;
      for (size_t ti = 0; ti < l.tiles.size(); ++ti)
        if (l.core_of_tile[ti] == j) spans(l, l.tiles[ti], rd, wr);
      merge(rd);
      merge(wr);
      // Earlier tasks this one conflicts with, latest first; one already
      // reached through another dependency is implied and left out.
      const size_t me = s.plan.tasks.size();
      std::vector<uint64_t> anc((me + 64) / 64, 0);
      for (size_t u = first; u-- > 0;) {
        if (anc[u / 64] >> (u % 64) & 1) continue;
        if (!(overlap(writes[u], rd) || overlap(reads[u], wr) || overlap(writes[u], wr))) continue;
        t.deps.push_back(uint32_t(u));
        anc[u / 64] |= uint64_t(1) << (u % 64);
        for (size_t w = 0; w < ancestors[u].size(); ++w) anc[w] |= ancestors[u][w];
      }
      std::reverse(t.deps.begin(), t.deps.end());
      reads.push_back(std::move(rd));
      writes.push_back(std::move(wr));
      ancestors.push_back(std::move(anc));
      s.plan.tasks.push_back(std::move(t));
    }
    info.insn_end[0] = uint32_t(pool.size());
    s.plan.layers.push_back(std::move(info));
  }
  s.plan.semaphores_used = uint32_t(ncores);
  return Status::ok();
}

}  // namespace loom::compiler
