// Tiling: per layer, of the tile sizes that fit the scratchpads (halved by
// double buffering), the one the cost model predicts fastest: every
// candidate of a conv/gemm (branch and bound on cycles_floor), the chunk of
// an element-wise or row layer (chunks.h).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "compiler/chunks.h"
#include "compiler/cost_model.h"
#include "compiler/pass.h"
#include "hw/timing.h"

namespace loom::compiler {
namespace {

std::string kib(int64_t bytes) { return std::to_string(bytes) + " B"; }

/// Descending candidates: `full`, then multiples of `unit` below it, then
/// halvings below `unit` so tiny budgets still find a tile.
std::vector<int64_t> candidates(int64_t full, int64_t unit) {
  std::vector<int64_t> v{full};
  for (int64_t t = (full - 1) / unit * unit; t >= unit; t -= unit) v.push_back(t);
  for (int64_t t = std::min(unit, full) / 2; t >= 1; t /= 2) v.push_back(t);
  return v;
}

class TilingPass final : public Pass {
 public:
  friend void loom::compiler::set_tile_search_memo(bool on);
  const PassInfo& info() const override {
    static const PassInfo i{
        "tiling",
        {PassOption::Fusion, PassOption::CostParams, PassOption::Depthwise, PassOption::GroupPacking,
         PassOption::RowWindows, PassOption::ImageBands, PassOption::BatchFold},
        {{"layers", "layers tiled"},
         {"dram_bytes_read", "predicted DRAM bytes read"},
         {"dram_bytes_written", "predicted DRAM bytes written"},
         {"residual_fused", "residual adds folded into POSTOP"},
         {"residual_refused", "residual adds left as layers"},
         {"rescale_fused", "concat requantizations written by their producer"},
         {"rescale_refused", "concat requantizations left as copies"},
         {"depthwise_layers", "convolutions on the depthwise unit"},
         {"packed_layers", "grouped convolutions with packed groups"},
         {"batch_folded_layers", "convolutions whose batch is folded into their rows"},
         {"candidates", "tilings considered"},
         {"evaluated", "tilings costed"},
         {"predicted_cycles", "predicted cycles of the chosen tilings"}}};
    return i;
  }

  Status run(CompileState& s) override {
    std::vector<size_t> absorbed;                   // graph nodes of residual adds folded into their producer
    std::vector<std::pair<size_t, size_t>> copies;  // (concat node, input) of copies a producer's rescale replaces
    const auto dropped = [&](const Layer& l) {
      return std::count(absorbed.begin(), absorbed.end(), l.node) ||
             (l.part.on && std::count(copies.begin(), copies.end(), std::pair{l.node, l.part.input}));
    };
    for (auto& l : s.layers) {
      if (dropped(l)) continue;
      switch (l.props->kind) {
        case LayerKind::Mac:
          if (l.res.candidate) {
            LOOM_TRY(weigh_residual(s, l));
            if (l.res.on) {
              absorbed.push_back(l.res.add_node);
              absorbed.insert(absorbed.end(), l.res.via.begin(), l.res.via.end());
            }
          }
          if (l.rescale.candidate) {
            LOOM_TRY(weigh_rescale(s, l));
            if (l.rescale.on) copies.emplace_back(l.rescale.concat, l.rescale.input);
          }
          LOOM_TRY(tile_mac(s, l, l.res.on || l.rescale.on, false));
          break;
        case LayerKind::Pool:
          LOOM_TRY(tile_pool(s, l));
          break;
        case LayerKind::Eltwise:
          if (l.row > 0)
            LOOM_TRY(tile_rows(s, l));
          else
            tile_eltwise(s, l);
          break;
        case LayerKind::Alias:
          s.decide(l.name, name(), "aliases '" + s.node(l).inputs[0] + "'", " (no instructions)");
          continue;
      }
      bump("layers");
      bump("dram_bytes_read", int64_t(l.tiling.bytes_read));
      bump("dram_bytes_written", int64_t(l.tiling.bytes_written));
    }
    std::vector<Layer> kept;
    for (auto& l : s.layers)
      if (!dropped(l)) kept.push_back(std::move(l));
    s.layers = std::move(kept);
    return Status::ok();
  }

 private:
  /// A legal residual group: the producer tiled with the residual tile in IN
  /// against the producer and the add as two layers. `greedy` fuses whenever
  /// a tile fits; `cost` only when the fused group is predicted faster.
  Status weigh_residual(CompileState& s, Layer& l) {
    const Layer* add = nullptr;
    for (const auto& x : s.layers)
      if (x.node == l.res.add_node) add = &x;
    if (!add) return Status::ok();
    LOOM_TRY(tile_mac(s, l, false, true));
    const Cost plain = l.cost;
    Layer alone = *add;
    best_eltwise_chunk(s, alone);
    const Cost add_cost = alone.cost;
    const Status fits = tile_mac(s, l, true, true);
    const Cost fused = l.cost;
    const uint64_t separate = plain.cycles + add_cost.cycles;
    const std::string group = l.name + "+" + add->name;
    if (!fits) {
      s.decide(group, name(), "kept separate", ": no tile fits IN with the residual tile");
    } else if (s.fusion() == Fusion::Cost && fused.cycles >= separate) {
      s.decide(group, name(), "kept separate (cost)",
               ": fused predicts " + std::to_string(fused.cycles) + " cycles with the residual tile in IN (tile " +
                   std::to_string(l.tiling.tm) + "x" + std::to_string(l.tiling.tn) + ", " +
                   std::to_string(fused.dram_read) + " B read), separate " + std::to_string(plain.cycles) + " + " +
                   std::to_string(add_cost.cycles) + " = " + std::to_string(separate) + " cycles",
               separate, {{"fused", fused.cycles}});
      bump("residual_refused");
    } else {
      l.res.on = true;
      s.decide(group, name(), "folded the add into POSTOP as a rescale",
               std::string(" (") + fusion_name(s.fusion()) + "): fused predicts " + std::to_string(fused.cycles) +
                   " cycles, separate " + std::to_string(plain.cycles) + " + " + std::to_string(add_cost.cycles) +
                   " = " + std::to_string(separate) + "; saves " +
                   std::to_string(int64_t(add_cost.dram_read + add_cost.dram_written) -
                                  int64_t(fused.dram_read - plain.dram_read)) +
                   " DRAM bytes and " + std::to_string(add_cost.insns) + " add instructions",
               fused.cycles, {{"separate", separate}});
      bump("residual_fused");
    }
    if (l.res.on) l.name += "+" + add->name;
    return Status::ok();
  }

  /// A conv/gemm that concat in place proposed to write its output into the
  /// concat's buffer requantized (Layer::Rescale), weighed like a residual:
  /// the layer with POSTOP's rescale (no band or depthwise mode, the PARAM
  /// pair) against the plain layer and the concat's copy of its output.
  Status weigh_rescale(CompileState& s, Layer& l) {
    const Layer* copy = nullptr;
    for (const auto& x : s.layers)
      if (x.part.on && x.node == l.rescale.concat && x.part.input == l.rescale.input) copy = &x;
    if (!copy) return Status::ok();
    LOOM_TRY(tile_mac(s, l, false, true));
    const Cost plain = l.cost;
    Layer alone = *copy;
    best_eltwise_chunk(s, alone);
    const Cost copy_cost = alone.cost;
    Layer fused = l;
    fused.rescale.on = true;
    fused.mac.yp = l.rescale.view.dense() ? 0 : l.rescale.view.pitch;
    const Status fits = tile_mac(s, fused, true, true);
    const uint64_t separate = plain.cycles + copy_cost.cycles;
    const std::string group = l.name + "+" + copy->name;
    if (!fits) {
      s.decide(group, name(), "kept separate", ": no tile fits with the rescale");
    } else if (s.fusion() == Fusion::Cost && fused.cost.cycles >= separate) {
      s.decide(group, name(), "kept separate (cost)",
               ": writing the concat's slice requantized predicts " + std::to_string(fused.cost.cycles) +
                   " cycles, the layer and the copy " + std::to_string(plain.cycles) + " + " +
                   std::to_string(copy_cost.cycles) + " = " + std::to_string(separate),
               separate, {{"fused", fused.cost.cycles}});
      bump("rescale_refused");
    } else {
      l.rescale.on = true;
      l.mac.yp = fused.mac.yp;
      s.tensor_view[s.node(l).outputs[0]] = l.rescale.view;
      s.decide(group, name(), "writes the concat's slice requantized by POSTOP's rescale",
               std::string(" (") + fusion_name(s.fusion()) + "): predicts " + std::to_string(fused.cost.cycles) +
                   " cycles, the layer and the copy " + std::to_string(plain.cycles) + " + " +
                   std::to_string(copy_cost.cycles) + " = " + std::to_string(separate),
               fused.cost.cycles, {{"separate", separate}});
      bump("rescale_fused");
      l.name += "+" + copy->name;
    }
    return Status::ok();
  }

  /// Group packing (MacGeom::pack) of a grouped convolution with constant
  /// weights: powers of two and multiples of the array's columns among the
  /// divisors of its groups, up to four column blocks of output channels.
  static std::vector<int64_t> pack_candidates(const MacGeom& g, int64_t cols) {
    std::vector<int64_t> v{1};
    if (g.groups <= 1 || !g.b_const) return v;
    for (int64_t d = 2; d <= g.groups && d * g.Ng <= 8 * cols; ++d)
      if (g.groups % d == 0) v.push_back(d);
    return v;
  }

  /// Tiles a conv/gemm layer: on the array, or (a depthwise convolution)
  /// on the depthwise unit when the cost model predicts it faster.
  Status tile_mac(CompileState& s, Layer& l, bool residual, bool quiet) {
    using D = CompileOptions::Depthwise;
    l.tiling.depthwise = false;
    if (l.mac.seams()) l.mac = unfolded(l.mac);  // this may run more than once per layer
    if (residual || s.depthwise() == D::Off || !depthwise_ok(l.mac)) return tile_array(s, l, residual, quiet);
    Layer dw = l;
    const Status dw_fits = tile_dw(s, dw, true);
    if (s.depthwise() == D::On && dw_fits) return tile_dw(s, l, quiet);
    const Status array_fits = tile_array(s, l, residual, true);
    const uint64_t array_cycles = l.cost.cycles;
    if (dw_fits && (!array_fits || dw.cost.cycles < array_cycles)) {
      LOOM_TRY(tile_dw(s, l, quiet));
      if (!quiet && array_fits)
        s.decide(l.name, name(), "depthwise unit",
                 ": predicted " + std::to_string(l.cost.cycles) + " cycles, the array " + std::to_string(array_cycles),
                 l.cost.cycles, {{"array", array_cycles}});
      return Status::ok();
    }
    LOOM_TRY(tile_array(s, l, residual, quiet));
    if (!quiet && dw_fits)
      s.decide(l.name, name(), "array",
               ": predicted " + std::to_string(l.cost.cycles) + " cycles, the depthwise unit " +
                   std::to_string(dw.cost.cycles),
               l.cost.cycles, {{"depthwise unit", dw.cost.cycles}});
    return Status::ok();
  }

  /// Depthwise mode (depthwise_ok): tiles of whole output rows of one image
  /// times a slice of channels (all of them, multiples of the scratchpad
  /// width, or halvings), as many rows as IN, ACC and OUT hold or fewer to
  /// spread the rows over the cores; the cost model picks.
  Status tile_dw(CompileState& s, Layer& l, bool quiet) {
    MacGeom& g = l.mac;
    if (g.seams()) g = unfolded(g);  // the array's tiling, weighed before, may have folded it
    g.groups *= g.pack, g.Cg /= g.pack, g.Ng /= g.pack, g.pack = 1;
    const Budget& b = s.budget;
    const int64_t spw = int64_t(hw::TimingParams::from(*s.cfg).spw);
    struct Cand {
      int64_t rows, tc;
    };
    std::vector<Cand> cands;
    for (int64_t tc : candidates(g.C, spw)) {
      if (12 * tc > b.param || g.KH * g.KW * tc > b.wgt) continue;
      const auto fits = [&](int64_t r) {
        return band_in_rows(g, r) * dw_pitch(g, tc) <= b.in && 4 * r * g.OW * tc <= b.acc && r * g.OW * tc <= b.out &&
               r * g.OW <= kField16;
      };
      int64_t top = g.OH;
      while (top > 0 && !fits(top)) --top;
      if (top == 0) continue;
      cands.push_back({top, tc});
      const int64_t nn = ceil_div(g.C, tc);
      for (int64_t k = 1; k <= 4; ++k) {
        const int64_t rows = ceil_div(g.OH, ceil_div(k * s.cores, g.batch * nn));
        if (rows < top) cands.push_back({rows, tc});
      }
    }
    if (cands.empty())
      return make_error("node '" + l.name + "'",
                        "no depthwise tile fits the scratchpads of config '" + std::string(s.cfg->name) + "'");
    const CostParams cp = s.cost();
    Tiling& t = l.tiling;
    t = Tiling{};
    t.depthwise = true;
    Tiling best_t;
    Cost best_cost;
    for (const Cand& c : cands) {
      t.tm = c.rows * g.OW, t.tn = c.tc;
      const Cost cost = estimate(cp, l, s.cores, b.slots);
      if (best_t.tm == 0 || cost.cycles < best_cost.cycles) best_t = t, best_cost = cost;
    }
    t = best_t;
    l.cost = best_cost;
    const int64_t nm = ceil_div(g.M(), t.tm), nn = ceil_div(g.C, t.tn);
    t.bytes_read = uint64_t(g.batch * nn * nm) * uint64_t(band_in_rows(g, t.tm / g.OW) * g.W) * uint64_t(t.tn) +
                   uint64_t(g.batch * nm) * uint64_t((g.KH * g.KW + 12) * g.C);
    t.bytes_written = uint64_t(g.batch * g.M() * g.Cout);
    if (quiet) return Status::ok();
    bump("depthwise_layers");
    bump("candidates", int64_t(cands.size()));
    bump("evaluated", int64_t(cands.size()));
    bump("predicted_cycles", int64_t(l.cost.cycles));
    const int64_t rows = t.tm / g.OW;
    s.decide(l.name, name(),
             "depthwise " + std::to_string(g.KH) + "x" + std::to_string(g.KW) + "/" + std::to_string(g.sh) + " on " +
                 std::to_string(g.C) + " channels, " + std::to_string(g.OH) + "x" + std::to_string(g.OW) +
                 " outputs: tiles of " + std::to_string(rows) + " output rows x " + std::to_string(t.tn) +
                 " channels (DWCONV)",
             "; IN " + kib(band_in_rows(g, rows) * dw_pitch(g, t.tn)) + "/" + kib(b.in) + ", WGT " +
                 kib(g.KH * g.KW * t.tn) + "/" + kib(b.wgt) + ", OUT " + kib(t.tm * t.tn) + "/" + kib(b.out) +
                 (b.slots > 1 ? " per slot" : "") + ", ACC " + kib(4 * t.tm * t.tn) + "/" + kib(b.acc) +
                 "; predicted DRAM bytes read " + std::to_string(t.bytes_read) + ", written " +
                 std::to_string(t.bytes_written) + "; " + l.cost.summary() + "; best of " +
                 std::to_string(cands.size()) + " candidates",
             l.cost.cycles);
    return Status::ok();
  }

  /// Tiles a conv/gemm layer on the array. A convolution of several images
  /// whose windows would cross the seams between them is tiled both image by
  /// image and with its batch folded into its rows (MacGeom::images: a tile
  /// spans images, so one weight load serves them all, and the gather pads
  /// at the seams), and the cost model's predicted cycles decide.
  Status tile_array(CompileState& s, Layer& l, bool residual, bool quiet) {
    using F = CompileOptions::BatchFold;
    const MacGeom base = l.mac;
    if (base.batch <= 1 || l.props->op != ir::OpKind::Conv2d || s.batch_fold() == F::Off)
      return tile_packs(s, l, residual, quiet);
    l.mac = folded(base);
    const Status fold_fits = tile_packs(s, l, residual, true);
    if (s.batch_fold() == F::On && fold_fits) {
      if (!quiet) bump("batch_folded_layers");
      return tile_packs(s, l, residual, quiet);
    }
    const uint64_t fold_cycles = l.cost.cycles;
    l.mac = base;
    const Status image_fits = tile_packs(s, l, residual, true);
    const uint64_t image_cycles = l.cost.cycles;
    const bool fold = fold_fits && (!image_fits || fold_cycles < image_cycles);
    l.mac = fold ? folded(base) : base;
    LOOM_TRY(tile_packs(s, l, residual, quiet));
    if (quiet || !fold_fits || !image_fits) return Status::ok();
    if (fold) bump("batch_folded_layers");
    const std::string batch = std::to_string(base.batch);
    s.decide(l.name, name(), fold ? "folds its batch of " + batch + " into its rows" : "tiles its batch image by image",
             ": predicted " + std::to_string(fold ? fold_cycles : image_cycles) + " cycles, " +
                 (fold ? "image by image " + std::to_string(image_cycles) : "folded " + std::to_string(fold_cycles)),
             l.cost.cycles, {{fold ? "image by image" : "batch folded", fold ? image_cycles : fold_cycles}});
    return Status::ok();
  }

  /// Tiles a conv/gemm layer of a given geometry on the array; a grouped
  /// convolution also chooses how many of its groups each GEMM packs, by the
  /// cost model's predicted cycles.
  Status tile_packs(CompileState& s, Layer& l, bool residual, bool quiet) {
    MacGeom base = l.mac;  // unpacked: this may run more than once per layer
    base.groups *= base.pack, base.Cg /= base.pack, base.Ng /= base.pack, base.pack = 1;
    const std::vector<int64_t> packs =
        s.group_packing() ? pack_candidates(base, s.cfg->array_cols) : std::vector<int64_t>{1};
    if (packs.size() == 1) {
      l.mac = base;
      return tile_mac_packed(s, l, residual, quiet);
    }
    int64_t best = 0;
    uint64_t best_cycles = 0;
    std::string tried;
    std::vector<Alternative> weighed;
    for (int64_t p : packs) {
      l.mac = packed(base, p);
      if (!tile_mac_packed(s, l, residual, true)) continue;
      tried += (tried.empty() ? "" : ", ") + std::to_string(p) + ": " + std::to_string(l.cost.cycles);
      weighed.push_back({"packs " + std::to_string(p), l.cost.cycles});
      if (best == 0 || l.cost.cycles < best_cycles) best = p, best_cycles = l.cost.cycles;
    }
    std::erase_if(weighed, [&](const Alternative& a) { return a.choice == "packs " + std::to_string(best); });
    l.mac = packed(base, best == 0 ? 1 : best);
    if (!quiet && best > 1) bump("packed_layers");
    if (!quiet && best > 0)
      s.decide(l.name, name(),
               best > 1 ? "packs " + std::to_string(best) + " of its " + std::to_string(base.groups) +
                              " groups into each GEMM (block-diagonal weights)"
                        : "runs its " + std::to_string(base.groups) + " groups one GEMM each",
               "; predicted cycles per groups packed: " + tried, best_cycles, std::move(weighed));
    return tile_mac_packed(s, l, residual, quiet);
  }

  /// A tile of a MAC layer the search may pick. A cheap lexicographic
  /// pre-score (cores kept busy, DRAM bytes, work of the busiest core,
  /// steps, bigger tiles) ranks the candidates before the cost model does.
  using Score = std::tuple<int64_t, uint64_t, int64_t, int64_t, int64_t, int64_t>;
  struct Cand {
    Score pre;
    int64_t tm, tn, cc, np;
    bool win = false, band = false;
  };

  /// Every tile of `l` that fits the scratchpads: K steps of whole kernel
  /// positions or channel chunks, plain, row-window and image-band tiles
  /// (only the forced kind when --row-windows/--image-bands on).
  std::vector<Cand> mac_candidates(const CompileState& s, const Layer& l, bool residual) const {
    const MacGeom& g = l.mac;
    const Budget& b = s.budget;
    const int64_t R = s.cfg->array_rows, C = s.cfg->array_cols;
    const int64_t P = g.KH * g.KW, M = g.M(), K = g.K(), bg = g.batch * g.groups;
    // K-step shapes: several whole kernel positions, or channel chunks of one.
    std::vector<std::pair<int64_t, int64_t>> kshapes;  // (cc, npos)
    for (int64_t np = P; np >= 1; --np) kshapes.emplace_back(g.Cg, np);
    for (int64_t cc : candidates(g.Cg, R))
      if (cc < g.Cg) kshapes.emplace_back(cc, 1);
    std::vector<Cand> cands;
    const int64_t cores = s.cores;
    for (int64_t tn : candidates(g.Ng, C)) {
      // PARAM: the tile's triples, and POSTOP rescale's pair after them.
      if (12 * tn + (residual ? 8 : 0) > b.param || 4 * tn > kField16) continue;
      for (const auto& shape : kshapes) {
        // Named copies, not a structured binding: the lambdas below capture them.
        const int64_t cc = shape.first, np = shape.second;
        const int64_t tk = cc * np;
        if (tk > kField16 || tk * tn > b.wgt) continue;
        // A residual tile (m x n int8) shares IN with the A tile.
        int64_t tmax = std::min({b.in / (tk + (residual ? tn : 0)), b.out / tn, b.acc / (4 * tn), kField16, M});
        if (tmax < 1) continue;
        if (tmax < M && tmax >= R) tmax = tmax / R * R;
        const int64_t nn = ceil_div(g.Ng, tn);
        const int64_t nk = cc == g.Cg ? ceil_div(P, np) : P * ceil_div(g.Cg, cc);
        auto push = [&](int64_t tm, bool win) {
          const int64_t nm = ceil_div(M, tm);
          // A from DRAM: the im2col rows once per N tile, or (row windows)
          // one input row per output-row run and kernel row.
          const int64_t a_bytes = win ? nm * window_rows(g, tm) * g.KH * g.W * g.Cg : M * K;
          const uint64_t bytes = uint64_t(bg) * uint64_t(nn * a_bytes + nm * K * g.Ng + nm * 12 * g.Ng);
          const int64_t tiles = bg * nm * nn;
          cands.push_back({{-std::min(tiles, cores), bytes, ceil_div(tiles, cores) * tm * tn, tiles * nk, -tm, -tn},
                           tm,
                           tn,
                           cc,
                           np,
                           win});
        };
        // The largest tile can leave the last round of tiles to a few cores
        // (784 rows in tiles of 192: 5 tiles on 4 cores). Rows split evenly
        // over k rounds of the cores (rounded up to whole array blocks) give
        // every core the same share.
        auto push_all = [&](int64_t top, bool win) {
          push(top, win);
          for (int64_t k = 1; k <= 4; ++k) {
            const int64_t nm = ceil_div(k * cores, bg * nn);
            int64_t tm = ceil_div(M, nm);
            if (tm >= R) tm = ceil_div(tm, R) * R;
            if (tm < top && tm >= 1) push(tm, win);
          }
        };
        push_all(tmax, false);
        if (cc == g.Cg && np == g.KW && row_window_ok(g) && s.row_windows() != CompileOptions::RowWindows::Off) {
          // Row windows: IN holds one padded input row per output-row run.
          const auto in_need = [&](int64_t tm) { return window_in_bytes(g, tm) + (residual ? tm * tn : 0); };
          int64_t tw = std::min({b.out / tn, b.acc / (4 * tn), kField16, M});
          while (tw > R && in_need(tw) > b.in) tw -= R;
          if (tw < M && tw >= R) tw = tw / R * R;
          if (tw >= 1 && in_need(tw) <= b.in) push_all(tw, true);
        }
        if (cc == g.Cg && np == g.KW && band_ok(g) && !residual && s.image_bands() != CompileOptions::ImageBands::Off &&
            K * tn <= b.wgt) {
          // Image bands: tiles of whole output rows whose input rows, GEMM
          // rows and K x tn weights fit.
          const auto fits = [&](int64_t tm) {
            const int64_t rows = band_max_rows(g, tm);
            return band_in_bytes(g, tm) <= b.in && tm * tn <= b.out && 4 * rows * tn <= b.acc && rows <= kField16;
          };
          const auto push_band = [&](int64_t tm) {
            const int64_t nm = ceil_div(M, tm);
            const int64_t a_bytes = nm * (window_rows(g, tm) + g.KH - 1) * g.W * g.Cg;
            const uint64_t bytes = uint64_t(bg) * uint64_t(nn * a_bytes + nm * K * g.Ng + nm * 12 * g.Ng);
            const int64_t tiles = bg * nm * nn;
            cands.push_back({{-std::min(tiles, cores), bytes, ceil_div(tiles, cores) * tm * tn, tiles, -tm, -tn},
                             tm,
                             tn,
                             cc,
                             np,
                             false,
                             true});
          };
          int64_t nr = g.OH;
          while (nr > 1 && !fits(nr * g.OW)) --nr;
          if (fits(nr * g.OW)) {
            push_band(nr * g.OW);
            for (int64_t k = 1; k <= 4; ++k) {
              const int64_t split = ceil_div(g.OH, ceil_div(k * cores, bg * nn));
              if (split < nr) push_band(split * g.OW);
            }
          }
        }
      }
    }
    if (s.row_windows() == CompileOptions::RowWindows::On &&
        std::any_of(cands.begin(), cands.end(), [](const Cand& c) { return c.win; }))
      cands.erase(std::remove_if(cands.begin(), cands.end(), [](const Cand& c) { return !c.win; }), cands.end());
    if (s.image_bands() == CompileOptions::ImageBands::On &&
        std::any_of(cands.begin(), cands.end(), [](const Cand& c) { return c.band; }))
      cands.erase(std::remove_if(cands.begin(), cands.end(), [](const Cand& c) { return !c.band; }), cands.end());
    return cands;
  }

  /// What the search over a MAC layer's candidates found: all that the
  /// layer's tiling and --explain's record need of it.
  struct Found {
    Cand best, first;  // the winner and the DRAM-bytes-first candidate
    size_t best_index = 0, count = 0, evaluated = 0;
    uint64_t best_cycles = 0, first_cycles = 0;
    Cost cost;  // the winner's
  };

  /// Everything the search reads: the layer's geometry and mode, the
  /// scratchpads, the cores, the cost parameters and the tile-kind options.
  /// Layers of one shape (a network's repeated blocks, every compile of one
  /// model under `loom tune`'s choices) ask the same question.
  struct Query {
    MacGeom g;
    Budget b;
    CostParams p;
    int64_t rows = 0, cols = 0;
    int cores = 0, row_windows = 0, image_bands = 0;
    bool residual = false, rescale = false, depthwise = false;
    auto operator<=>(const Query&) const = default;
  };
  static Query query(const CompileState& s, const Layer& l, bool residual) {
    return {l.mac,
            s.budget,
            s.cost(),
            s.cfg->array_rows,
            s.cfg->array_cols,
            s.cores,
            int(s.row_windows()),
            int(s.image_bands()),
            residual,
            l.rescale.on,
            l.tiling.depthwise};
  }

  /// The search's answers, remembered: the search is a pure function of its
  /// Query. One memo a thread (set_tile_search_memo), emptied when it grows
  /// past kMaxEntries.
  struct SearchMemo {
    bool on = true;
    std::map<Query, Found> found;
  };
  static SearchMemo& search_memo() {
    thread_local SearchMemo m;
    return m;
  }
  static constexpr size_t kMaxEntries = size_t(1) << 14;

  /// --explain's record of the tile picked for `l`: its sizes, the
  /// scratchpads it fills, and the first candidate when the cost model chose
  /// another.
  void explain_mac_tile(CompileState& s, const Layer& l, const Found& f, bool residual) {
    const MacGeom& g = l.mac;
    const Budget& b = s.budget;
    const Tiling& t = l.tiling;
    const int64_t M = g.M(), K = g.K();
    const int64_t btm = f.best.tm, btn = f.best.tn, tk = f.best.cc * f.best.np;
    const bool bwin = f.best.win, bband = f.best.band;
    const int64_t in_bytes = bband ? band_in_bytes(g, btm) : bwin ? window_in_bytes(g, btm) : btm * tk;
    const int64_t c_rows = bband ? band_max_rows(g, btm) : btm;  // ACC rows (OUT holds the tm valid ones)
    s.decide(
        l.name, name(),
        "M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(g.Ng) +
            (g.groups > 1 ? " x" + std::to_string(g.groups) + " groups" : "") + ": tm=" + std::to_string(btm) + " tn=" +
            std::to_string(btn) + " tk=" + std::to_string(tk) + " (" + std::to_string(t.ksteps.size()) + " K steps" +
            (bwin    ? ", row windows"
             : bband ? ", image bands"
                     : "") +
            ")",
        "; IN " + kib(in_bytes + (residual ? btm * btn : 0)) + "/" + kib(b.in) + ", WGT " +
            kib((bband ? K : tk) * btn) + "/" + kib(b.wgt) + ", OUT " + kib(btm * btn) + "/" + kib(b.out) +
            (b.slots > 1 ? " per slot" : "") + ", ACC " + kib(4 * c_rows * btn) + "/" + kib(b.acc) +
            "; predicted DRAM bytes read " + std::to_string(t.bytes_read) + ", written " +
            std::to_string(t.bytes_written) + "; " + l.cost.summary() + "; best of " + std::to_string(f.count) +
            " candidates (" + std::to_string(f.evaluated) + " costed, the rest bounded out by their array cycles" +
            (f.best_index == 0 ? "" : "; the DRAM-bytes-first choice predicts " + std::to_string(f.first_cycles)) + ")",
        f.best_cycles,
        f.best_index == 0 ? std::vector<Alternative>{}
                          : std::vector<Alternative>{{"the DRAM-bytes-first tile: tm=" + std::to_string(f.first.tm) +
                                                          " tn=" + std::to_string(f.first.tn) +
                                                          " tk=" + std::to_string(f.first.cc * f.first.np),
                                                      f.first_cycles}});
  }

  /// Candidate `c` as l's tiling (the other fields kept).
  static void take(Tiling& t, const MacGeom& g, const Cand& c) {
    t.tm = c.tm, t.tn = c.tn;
    fill_ksteps(g, c.cc, c.np, t.ksteps);
    t.row_window = c.win;
    t.band = c.band;
  }

  /// Every candidate that fits, by predicted cycles; the pre-score orders
  /// them, so among equal predictions the first in that order wins. (The
  /// pre-score alone is a poor guide: on ResNet-50, ConvNeXt-T, ViT-Ti,
  /// DenseNet and EfficientNet-B0 the winner is past its 24th candidate on
  /// 274 layers of 356.)
  /// Branch and bound: candidates by their cycles_floor (the first one
  /// always, for --explain's comparison), each costed only while its floor
  /// is not above the best prediction so far; the result is the full
  /// search's. Leaves l.tiling at some candidate.
  std::optional<Found> search(const CompileState& s, Layer& l, bool residual) const {
    std::vector<Cand> cands = mac_candidates(s, l, residual);
    if (cands.empty()) return std::nullopt;
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& c) { return a.pre < c.pre; });
    const CostParams cp = s.cost();
    std::vector<std::pair<uint64_t, size_t>> order;  // (floor, index in pre-score order)
    for (size_t i = 0; i < cands.size(); ++i) {
      take(l.tiling, l.mac, cands[i]);
      order.emplace_back(i == 0 ? 0 : cycles_floor(cp, l, s.cores, residual), i);
    }
    std::sort(order.begin(), order.end());
    Found f;
    f.count = cands.size();
    f.first = cands[0];
    f.best_cycles = UINT64_MAX;
    for (const auto& [floor, i] : order) {
      if (floor > f.best_cycles) break;
      take(l.tiling, l.mac, cands[i]);
      const Cost cost = estimate(cp, l, s.cores, s.budget.slots, residual);
      ++f.evaluated;
      if (i == 0) f.first_cycles = cost.cycles;
      if (cost.cycles < f.best_cycles || (cost.cycles == f.best_cycles && i < f.best_index))
        f.best_index = i, f.best_cycles = cost.cycles, f.cost = cost;
    }
    f.best = cands[f.best_index];
    return f;
  }

  Status tile_mac_packed(CompileState& s, Layer& l, bool residual, bool quiet) {
    const MacGeom& g = l.mac;
    SearchMemo& known = search_memo();
    const Query q = query(s, l, residual);
    auto it = known.found.find(q);
    if (it == known.found.end()) {
      std::optional<Found> f = search(s, l, residual);
      if (!f)
        return make_error("node '" + l.name + "'",
                          "no tile of this layer fits the scratchpads of config '" + std::string(s.cfg->name) + "'");
      if (!known.on || known.found.size() >= kMaxEntries) known.found.clear();
      it = known.found.emplace(q, *f).first;
    }
    const Found f = it->second;
    if (!known.on) known.found.clear();
    take(l.tiling, g, f.best);
    l.cost = f.cost;
    if (quiet) return Status::ok();
    bump("candidates", int64_t(f.count));
    bump("evaluated", int64_t(f.evaluated));
    bump("predicted_cycles", int64_t(f.best_cycles));
    l.tiling.bytes_read = std::get<1>(f.best.pre);
    l.tiling.bytes_written = uint64_t(g.batch * g.M() * g.Cout);
    explain_mac_tile(s, l, f, residual);
    return Status::ok();
  }

  std::string cost_of(const CompileState& s, Layer& l) {
    l.cost = estimate(s.cost(), l, s.cores, s.budget.slots);
    bump("predicted_cycles", int64_t(l.cost.cycles));
    return l.cost.summary();
  }

  /// A tile's K steps (`cc` channels of one kernel position, or `np` whole
  /// positions) into `v`, its storage reused: the search fills it per candidate.
  static void fill_ksteps(const MacGeom& g, int64_t cc, int64_t np, std::vector<KStep>& v) {
    const int64_t P = g.KH * g.KW;
    v.clear();
    if (cc == g.Cg) {
      for (int64_t p = 0; p < P; p += np) v.push_back({p, std::min(np, P - p), 0, g.Cg});
    } else {
      for (int64_t p = 0; p < P; ++p)
        for (int64_t c = 0; c < g.Cg; c += cc) v.push_back({p, 1, c, std::min(cc, g.Cg - c)});
    }
  }

  Status tile_pool(CompileState& s, Layer& l) {
    const PoolGeom& g = l.pool;
    const Budget& b = s.budget;
    const int64_t win = g.win(), M = g.OH * g.OW;
    int64_t cc = 0;
    for (int64_t c : candidates(g.C, s.cfg->array_cols))
      if (win * c <= b.in && c <= b.out && c <= kField16) {
        cc = c;
        break;
      }
    if (cc == 0 || win > kField16)
      return make_error("node '" + l.name + "'",
                        "a pooling window of " + std::to_string(win) + " elements does not fit the IN scratchpad");
    int64_t tm = std::min({b.in / (win * cc), b.out / cc, kField16, M});
    if (g.global) tm = 1;
    if (tm < M && tm >= s.cfg->array_rows) tm = tm / s.cfg->array_rows * s.cfg->array_rows;
    Tiling& t = l.tiling;
    t.tm = tm, t.tn = cc;
    t.bytes_read = uint64_t(g.batch * M * win * g.C);
    t.bytes_written = uint64_t(g.batch * M * g.C);
    const std::string cost = cost_of(s, l);
    s.decide(l.name, name(),
             "window " + std::to_string(win) + ": " + std::to_string(tm) + " pixels x " + std::to_string(cc) +
                 " channels per tile",
             "; IN " + kib(tm * win * cc) + "/" + kib(b.in) + ", OUT " + kib(tm * cc) + "/" + kib(b.out) +
                 "; predicted DRAM bytes read " + std::to_string(t.bytes_read) + ", written " +
                 std::to_string(t.bytes_written) + "; " + cost,
             l.cost.cycles);
    return Status::ok();
  }

  /// softmax / layernorm: chunks of whole rows (ROWNORM's m x n), the
  /// table or the channel triples in PARAM for the whole layer.
  Status tile_rows(CompileState& s, Layer& l) {
    const Budget& b = s.budget;
    const int64_t param = s.node(l).op == ir::OpKind::LayerNorm ? 12 * l.row : 512;
    const int64_t param_bytes = int64_t(s.cfg->param_kib) * 1024;
    if (param > param_bytes)
      return make_error("node '" + l.name + "'", "a row of " + std::to_string(l.row) + " channels needs " + kib(param) +
                                                     " of PARAM, the configuration has " + kib(param_bytes));
    const int64_t rows = std::min({b.in / l.row, b.out / l.row, kField16, l.elems / l.row});
    if (rows < 1)
      return make_error("node '" + l.name + "'",
                        "a row of " + std::to_string(l.row) + " elements does not fit the IN and OUT scratchpads");
    Tiling& t = l.tiling;
    const int64_t nrows = l.elems / l.row;
    const ChunkChoice choice = counted(l, best_row_chunk(s, l, rows));
    t.bytes_read = uint64_t(l.elems + param * std::max(l.cost.cores_used, 1));  // PARAM once a core
    t.bytes_written = uint64_t(l.elems);
    s.decide(l.name, name(),
             std::to_string(nrows) + " rows of " + std::to_string(l.row) + " in chunks of " +
                 std::to_string(t.tm / l.row) + " rows",
             "; PARAM " + kib(param) + "/" + kib(param_bytes) + " once a core; predicted DRAM bytes read " +
                 std::to_string(t.bytes_read) + ", written " + std::to_string(t.bytes_written) + "; " +
                 l.cost.summary(),
             l.cost.cycles, chunk_alternative(l, choice));
    return Status::ok();
  }

  void tile_eltwise(CompileState& s, Layer& l) {
    const int64_t operands = l.operands();
    Tiling& t = l.tiling;
    t.bytes_read = uint64_t(operands * l.elems);
    t.bytes_written = uint64_t(l.elems);
    const ChunkChoice choice = counted(l, best_eltwise_chunk(s, l));
    s.decide(l.name, name(), std::to_string(l.elems) + " elements in chunks of " + std::to_string(t.tm),
             "; predicted DRAM bytes read " + std::to_string(t.bytes_read) + ", written " +
                 std::to_string(t.bytes_written) + "; " + l.cost.summary(),
             l.cost.cycles, chunk_alternative(l, choice));
  }

  /// The statistics of a chunk choice for the layer it tiled.
  ChunkChoice counted(const Layer& l, const ChunkChoice& c) {
    bump("candidates", c.candidates);
    bump("evaluated", c.candidates);
    bump("predicted_cycles", int64_t(l.cost.cycles));
    return c;
  }

  /// When a smaller chunk won, the largest one's prediction.
  static std::vector<Alternative> chunk_alternative(const Layer& l, const ChunkChoice& c) {
    if (l.tiling.tm == c.largest) return {};
    return {{"the largest chunk, " + std::to_string(c.largest), c.largest_cycles}};
  }
};

}  // namespace

std::unique_ptr<Pass> make_tiling_pass() { return std::make_unique<TilingPass>(); }

void set_tile_search_memo(bool on) {
  TilingPass::search_memo().on = on;
  TilingPass::search_memo().found.clear();
}

}  // namespace loom::compiler
