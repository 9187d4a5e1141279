// Placement: which core runs which output tile.
//
// - static: each layer's output tiles go to the cores round-robin; a
//   semaphore barrier separates layers. Core c reaches memory port
//   c % mem_ports, so consecutive tiles land on different ports and no port
//   carries more than its share of a layer's tiles (the decision lists them).
// - pipeline: the layers are cut into contiguous stages on groups of cores,
//   balanced by the cost model's predicted cycles on the group; with a batch,
//   stages hand images over one by one through semaphores (codegen), so they
//   overlap.
// - dynamic: each layer's tiles are cut into tasks (contiguous runs of tiles,
//   so a task covers a band of output rows) spread over the memory ports; the
//   codegen computes the dependencies and the runtime dispatches (tasks.cc,
//   runtime/dispatch.h).
#include <algorithm>
#include <limits>
#include <string>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

/// Granule a tile is cut in: whole rows for softmax/layernorm, 64
/// elements for other elementwise ops, whole output rows for depthwise
/// tiles (DWCONV), array rows of pixels otherwise.
int64_t elt_align(const CompileState& s, const Layer& l) {
  if (l.props->kind == LayerKind::Mac && l.tiling.depthwise) return l.mac.OW;
  if (l.props->kind != LayerKind::Eltwise) return int64_t(s.cfg->array_rows);
  return l.row > 0 ? l.row : 64;
}
bool is_gemm(const Layer& l) { return l.props->kind == LayerKind::Mac && l.props->op != ir::OpKind::Conv2d; }
/// A mac layer whose rows hold the batch's images one after another (a gemm,
/// or a conv with its batch folded into its rows): it splits by rows.
bool rows_hold_images(const Layer& l) { return is_gemm(l) || l.mac.images > 1; }

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s.append(s.empty() ? "" : "/").append(std::to_string(x));
  return s;
}

class PlacementPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"placement",
                            {PassOption::Placement, PassOption::TasksPerCore, PassOption::CostParams},
                            {{"tiles", "output tiles placed"},
                             {"barriers", "barriers between layers (static)"},
                             {"cores", "cores used"},
                             {"imbalance_tiles", "tiles the busiest core has over the idlest, summed over layers"},
                             {"stages", "pipeline stages"},
                             {"units", "images synchronised one by one (pipeline)"},
                             {"predicted_cycles", "the pipeline's predicted cycles"},
                             {"split_tiles", "tiles split to balance tasks (dynamic)"},
                             {"tasks", "tile tasks (dynamic)"}}};
    return i;
  }

  Status run(CompileState& s) override {
    const Placement mode = s.placement();
    s.units = mode == Placement::Pipeline ? pipeline_units(s) : 1;
    int64_t emitting = 0;
    for (auto& l : s.layers) {
      l.tiles.clear();
      l.core_of_tile.clear();
      l.task_port.clear();
      l.slots_of_tiles = 0;
      switch (l.props->kind) {
        case LayerKind::Mac:
          mac_tiles(l, s.units);
          break;
        case LayerKind::Pool:
          pool_tiles(l);
          break;
        case LayerKind::Eltwise:
          for (int64_t u = 0, per = l.elems / s.units; u < s.units; ++u)  // pipeline_units keeps per whole rows
            for (int64_t e = u * per; e < (u + 1) * per; e += l.tiling.tm)
              l.tiles.push_back({0, 0, e, std::min(l.tiling.tm, (u + 1) * per - e), 0, 0});
          break;
        case LayerKind::Alias:
          continue;
      }
      ++emitting;
      bump("tiles", int64_t(l.tiles.size()));
    }
    switch (mode) {
      case Placement::Static:
        for (auto& l : s.layers)
          if (l.props->kind != LayerKind::Alias) place_static(s, l);
        set("barriers", std::max<int64_t>(emitting - 1, 0));
        break;
      case Placement::Pipeline:
        s.reuse_buffers = false;
        place_pipeline(s);
        break;
      case Placement::Dynamic:
        for (auto& l : s.layers)
          if (l.props->kind != LayerKind::Alias) place_dynamic(s, l);
        break;
    }
    set("cores", s.cores);
    return Status::ok();
  }

 private:
  static int ports(const CompileState& s) { return int(std::max(1u, s.cfg->mem_ports)); }

  /// Tiles of each port for a core assignment: core c uses port c % ports.
  static std::vector<int64_t> port_tiles(const CompileState& s, const std::vector<int>& core_of) {
    std::vector<int64_t> n(size_t(ports(s)), 0);
    for (int c : core_of) ++n[spec::mem_port_of(*s.cfg, unsigned(c))];
    return n;
  }

  void place_static(CompileState& s, Layer& l) {
    std::vector<int64_t> per_core(size_t(s.cores), 0);
    l.core_of_tile.resize(l.tiles.size());
    for (size_t i = 0; i < l.tiles.size(); ++i) {
      l.core_of_tile[i] = int(i % size_t(s.cores));
      ++per_core[size_t(l.core_of_tile[i])];
    }
    const std::string choice = std::to_string(l.tiles.size()) + " tiles round-robin over " + std::to_string(s.cores) +
                               " cores (" + joined(per_core) + ")";
    std::string why;
    if (ports(s) > 1) {
      const auto pt = port_tiles(s, l.core_of_tile);
      why = "; memory ports carry " + joined(pt) + " tiles (core c on port c % " + std::to_string(ports(s)) +
            ", share " + std::to_string(ceil_div(int64_t(l.tiles.size()), ports(s))) + ")";
    }
    s.decide(l.name, name(), choice, why);
    const int64_t mx = *std::max_element(per_core.begin(), per_core.end());
    const int64_t mn = *std::min_element(per_core.begin(), per_core.end());
    bump("imbalance_tiles", mx - mn);
  }

  /// Images the pipeline hands over one by one: the batch when every layer's
  /// tiles can be split by image (conv and pools by image, gemm by rows when
  /// its rows are the batch, elementwise by element ranges), else 1.
  static int pipeline_units(const CompileState& s) {
    int64_t batch = 0;
    for (const auto& l : s.layers)
      if (l.props->kind == LayerKind::Mac && !is_gemm(l))
        batch = std::max(batch, l.mac.batch * l.mac.images);
      else if (l.props->kind == LayerKind::Pool)
        batch = std::max(batch, l.pool.batch);
    if (batch <= 1) return 1;
    for (const auto& l : s.layers) {
      switch (l.props->kind) {
        case LayerKind::Mac:
          if (rows_hold_images(l) ? l.mac.M() % batch != 0 : l.mac.batch != batch) return 1;
          break;
        case LayerKind::Pool:
          if (l.pool.batch != batch) return 1;
          break;
        case LayerKind::Eltwise:
          if (l.elems % batch != 0 || (l.row > 0 && (l.elems / batch) % l.row != 0)) return 1;
          if (l.part.on && l.part.rows % batch != 0) return 1;  // a concat along the batch
          break;
        case LayerKind::Alias:
          break;
      }
    }
    return int(batch);
  }

  /// The share of `l` that one of `units` units computes (one image).
  /// ... on `gs` cores, its tiles cut as split_for_stage() cuts them.
  static Layer unit_layer(const CompileState& s, const Layer& l, int64_t units, int gs) {
    Layer one = l;
    one.tiles.clear();
    if (units > 1) shrink_to_unit(one, units);
    int64_t tiles = 1;
    switch (one.props->kind) {
      case LayerKind::Mac:
        tiles = tile_groups(one.mac, one.tiling) * ceil_div(one.mac.M(), one.tiling.tm) *
                ceil_div(tile_channels(one.mac, one.tiling), one.tiling.tn);
        break;
      case LayerKind::Pool:
        tiles = ceil_div(one.pool.OH * one.pool.OW, one.tiling.tm) * ceil_div(one.pool.C, one.tiling.tn);
        break;
      case LayerKind::Eltwise:
        tiles = ceil_div(one.elems, one.tiling.tm);
        break;
      case LayerKind::Alias:
        break;
    }
    if (gs > 1 && tiles < gs) {
      const int64_t align = elt_align(s, one);
      one.tiling.tm = std::max(align, ceil_div(ceil_div(one.tiling.tm, ceil_div(gs, tiles)), align) * align);
    }
    return one;
  }

  static void shrink_to_unit(Layer& one, int64_t units) {
    const Layer& l = one;
    switch (l.props->kind) {
      case LayerKind::Mac:
        if (is_gemm(l)) {
          one.mac.W = one.mac.OW = l.mac.M() / units;
        } else if (l.mac.images > 1) {
          one.mac.H = l.mac.H / units, one.mac.OH = l.mac.OH / units, one.mac.images = l.mac.images / units;
        } else {
          one.mac.batch = 1;
        }
        one.macs = l.macs / uint64_t(units);
        break;
      case LayerKind::Pool:
        one.pool.batch = 1;
        break;
      case LayerKind::Eltwise:
        one.elems = l.elems / units;
        break;
      case LayerKind::Alias:
        break;
    }
  }

  /// Which unit (image) a tile belongs to.
  static int64_t unit_of(const CompileState& s, const Layer& l, const Tile& t) {
    if (s.units == 1) return 0;
    switch (l.props->kind) {
      case LayerKind::Mac:
        return rows_hold_images(l) ? t.m0 / (l.mac.M() / s.units) : t.img;
      case LayerKind::Pool:
        return t.img;
      case LayerKind::Eltwise:
        return t.m0 / (l.elems / s.units);
      case LayerKind::Alias:
        break;
    }
    return 0;
  }

  void place_pipeline(CompileState& s) {
    std::vector<size_t> em;
    for (size_t i = 0; i < s.layers.size(); ++i)
      if (s.layers[i].props->kind != LayerKind::Alias) em.push_back(i);
    const int64_t n = int64_t(em.size());
    const CostParams cp = s.cost();
    const int64_t U = s.units;
    // Candidate stage counts: divisors of the cores (equal groups), at most
    // one stage per layer, and two semaphores per stage.
    struct Best {
      int S = 1;
      uint64_t total = std::numeric_limits<uint64_t>::max();
      std::vector<int64_t> cut;  // stage k = em[cut[k] .. cut[k+1])
      std::vector<uint64_t> stage_cycles;
    } best;
    std::string tried;
    for (int S = std::min<int64_t>(s.cores, n); S >= 1; --S) {
      if (s.cores % S != 0 || uint32_t(2 * S) > s.cfg->semaphores) continue;
      if (S == 1 && best.S > 1) continue;  // one stage is data parallelism: only when nothing else fits
      const int gs = s.cores / S;
      std::vector<uint64_t> c(static_cast<size_t>(n));
      // A stage runs one unit (image) at a time: its cores share that
      // image's tiles only.
      for (int64_t i = 0; i < n; ++i) {
        const Layer one = unit_layer(s, s.layers[em[size_t(i)]], U, gs);
        c[size_t(i)] = uint64_t(U) * estimate(cp, one, gs, s.budget.slots, one.res.on || one.rescale.on).cycles;
      }
      std::vector<uint64_t> pre(size_t(n) + 1, 0);
      for (int64_t i = 0; i < n; ++i) pre[size_t(i) + 1] = pre[size_t(i)] + c[size_t(i)];
      // dp[k][j]: the least largest stage over the first j layers in k stages.
      const uint64_t inf = std::numeric_limits<uint64_t>::max();
      std::vector<std::vector<uint64_t>> dp(size_t(S) + 1, std::vector<uint64_t>(size_t(n) + 1, inf));
      std::vector<std::vector<int64_t>> from(size_t(S) + 1, std::vector<int64_t>(size_t(n) + 1, 0));
      dp[0][0] = 0;
      for (int k = 1; k <= S; ++k)
        for (int64_t j = k; j <= n; ++j)
          for (int64_t i = k - 1; i < j; ++i) {
            if (dp[size_t(k) - 1][size_t(i)] == inf) continue;
            const uint64_t v = std::max(dp[size_t(k) - 1][size_t(i)], pre[size_t(j)] - pre[size_t(i)]);
            if (v < dp[size_t(k)][size_t(j)]) {
              dp[size_t(k)][size_t(j)] = v;
              from[size_t(k)][size_t(j)] = i;
            }
          }
      std::vector<int64_t> cut(size_t(S) + 1, n);
      for (int k = S; k >= 1; --k) cut[size_t(k) - 1] = from[size_t(k)][size_t(cut[size_t(k)])];
      std::vector<uint64_t> sc;
      uint64_t sum = 0, mx = 0;
      for (int k = 0; k < S; ++k) {
        sc.push_back(pre[size_t(cut[size_t(k) + 1])] - pre[size_t(cut[size_t(k)])]);
        sum += sc.back() / uint64_t(U);
        mx = std::max(mx, sc.back() / uint64_t(U));
      }
      // Per unit every stage takes its share; the slowest stage paces the rest.
      const uint64_t total = sum + uint64_t(U - 1) * mx;
      tried += (tried.empty() ? "" : ", ") + std::to_string(S) + " stages x " + std::to_string(gs) +
               " cores: " + std::to_string(total);
      if (total < best.total || (S > 1 && best.S == 1)) best = {S, total, cut, sc};
    }
    uint64_t data_parallel = 0;
    for (size_t i : em) data_parallel += s.layers[i].cost.cycles;
    const int gs = s.cores / best.S;
    s.stages.clear();
    for (int k = 0; k < best.S; ++k) {
      Stage st;
      st.first = em[size_t(best.cut[size_t(k)])];
      st.last = em[size_t(best.cut[size_t(k) + 1]) - 1];
      for (int c = 0; c < gs; ++c) st.cores.push_back(k * gs + c);
      st.cycles = best.stage_cycles[size_t(k)];
      std::string cores, pts;
      for (int c : st.cores) {
        cores.append(cores.empty() ? "" : ",").append(std::to_string(c));
        pts.append(pts.empty() ? "" : ",").append(std::to_string(spec::mem_port_of(*s.cfg, unsigned(c))));
      }
      s.decide(s.layers[st.first].name + ".." + s.layers[st.last].name, name(),
               "stage " + std::to_string(k) + " on cores " + cores + " (ports " + pts + ")",
               ": predicted " + std::to_string(st.cycles) + " cycles for " + std::to_string(U) + " unit(s)", st.cycles);
      s.stages.push_back(std::move(st));
    }
    s.decide(s.graph.name, name(),
             "pipeline of " + std::to_string(best.S) + " stages, " +
                 (U > 1 ? std::to_string(U) + " images handed over one by one"
                        : std::string("one unit (no batch to overlap: stages run one after the other)")),
             "; predicted " + std::to_string(best.total) + " cycles against " + std::to_string(data_parallel) +
                 " data-parallel (" + tried + "); liveness reuse off (stages work on different images at once)",
             best.total, {{"data-parallel", data_parallel}});
    for (const auto& st : s.stages)
      for (size_t li = st.first; li <= st.last; ++li) {
        Layer& l = s.layers[li];
        if (l.props->kind == LayerKind::Alias) continue;
        split_for_stage(s, l, gs);
        std::vector<int64_t> next(size_t(U), 0);
        l.core_of_tile.resize(l.tiles.size());
        for (size_t i = 0; i < l.tiles.size(); ++i) {
          const int64_t u = unit_of(s, l, l.tiles[i]);
          l.core_of_tile[i] = int(u * gs + next[size_t(u)]++ % gs);
        }
        l.slots_of_tiles = int(U) * gs;
      }
    set("stages", best.S);
    set("units", U);
    set("predicted_cycles", int64_t(best.total));
    s.pipeline_cycles = best.total;
  }

  /// The tiling was chosen for the whole batch on every core; a stage's
  /// cores share one unit's tiles. When a unit has fewer tiles than the
  /// stage has cores, its tiles are cut along their pixels (elements) into
  /// pieces of a multiple of the array rows, so no stage core idles.
  void split_for_stage(CompileState& s, Layer& l, int gs) {
    if (gs <= 1) return;
    std::vector<int64_t> per_unit(size_t(s.units), 0);
    for (const auto& t : l.tiles) ++per_unit[size_t(unit_of(s, l, t))];
    const int64_t fewest = *std::min_element(per_unit.begin(), per_unit.end());
    if (fewest >= gs || fewest == 0) return;
    const int64_t pieces = ceil_div(gs, fewest);
    const int64_t align = elt_align(s, l);
    std::vector<Tile> out;
    for (const auto& t : l.tiles) {
      const int64_t step = std::max(align, ceil_div(ceil_div(t.m, pieces), align) * align);
      for (int64_t m0 = t.m0; m0 < t.m0 + t.m; m0 += step) {
        Tile p = t;
        p.m0 = m0;
        p.m = std::min(step, t.m0 + t.m - m0);
        out.push_back(p);
      }
    }
    if (out.size() == l.tiles.size()) return;
    s.decide(l.name, name(), std::to_string(l.tiles.size()) + " tiles cut into " + std::to_string(out.size()),
             " so each of the stage's " + std::to_string(gs) + " cores has work per unit");
    bump("split_tiles", int64_t(out.size() - l.tiles.size()));
    l.tiles = std::move(out);
  }

  void place_dynamic(CompileState& s, Layer& l) {
    const int64_t n = int64_t(l.tiles.size());
    const int64_t T = std::max<int64_t>(1, std::min<int64_t>(n, int64_t(std::max(1, s.tasks_per_core())) * s.cores));
    l.core_of_tile.resize(size_t(n));
    std::vector<int64_t> sizes(size_t(T), 0);
    for (int64_t j = 0; j < T; ++j)
      for (int64_t i = j * n / T; i < (j + 1) * n / T; ++i) {
        l.core_of_tile[size_t(i)] = int(j);
        ++sizes[size_t(j)];
      }
    l.slots_of_tiles = int(T);
    std::vector<int64_t> per_port(size_t(ports(s)), 0);
    for (int64_t j = 0; j < T; ++j) {
      l.task_port.push_back(int(j % ports(s)));
      per_port[size_t(j % ports(s))] += sizes[size_t(j)];
    }
    s.decide(
        l.name, name(),
        std::to_string(n) + " tiles in " + std::to_string(T) + " tasks of consecutive tiles (" + joined(sizes) + ")",
        ", spread over " + std::to_string(ports(s)) + " memory port(s) (" + joined(per_port) +
            " tiles); dependencies from the tensors' byte ranges");
    bump("tasks", T);
  }

  static void mac_tiles(Layer& l, int64_t units) {
    const MacGeom& g = l.mac;
    const Tiling& t = l.tiling;
    // A gemm whose rows are the batch splits its row tiles at image boundaries.
    const int64_t span = (units > 1 && rows_hold_images(l)) ? g.M() / units : g.M();
    const int64_t N = tile_channels(g, t);
    for (int64_t img = 0; img < g.batch; ++img)
      for (int64_t grp = 0; grp < tile_groups(g, t); ++grp)
        for (int64_t u0 = 0; u0 < g.M(); u0 += span)
          for (int64_t m0 = u0; m0 < u0 + span; m0 += t.tm)
            for (int64_t n0 = 0; n0 < N; n0 += t.tn)
              l.tiles.push_back({img, grp, m0, std::min(t.tm, u0 + span - m0), n0, std::min(t.tn, N - n0)});
  }
  static void pool_tiles(Layer& l) {
    const PoolGeom& g = l.pool;
    const Tiling& t = l.tiling;
    const int64_t M = g.OH * g.OW;
    for (int64_t img = 0; img < g.batch; ++img)
      for (int64_t m0 = 0; m0 < M; m0 += t.tm)
        for (int64_t c0 = 0; c0 < g.C; c0 += t.tn)
          l.tiles.push_back({img, 0, m0, std::min(t.tm, M - m0), c0, std::min(t.tn, g.C - c0)});
  }
};

}  // namespace

std::unique_ptr<Pass> make_placement_pass() { return std::make_unique<PlacementPass>(); }

}  // namespace loom::compiler
