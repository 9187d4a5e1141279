// The pass interface and the state the pipeline threads through its passes
// (layers, tiling, placement, memory plan, the plan being built).
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/cost_model.h"
#include "compiler/op_table.h"

namespace loom::compiler {

/// conv2d and gemm as one convolution-shaped problem (gemm: one image of
/// 1 x M pixels, a 1x1 kernel and K input channels), per group:
/// C[M][Ng] = im2col(x)[M][K] * B[K][Ng] with K = KH*KW*Cg.
struct MacGeom {
  int64_t batch = 1, H = 1, W = 1, C = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0;
  int64_t groups = 1, Cg = 1, Ng = 1, Cout = 1;
  /// Group packing: `pack` consecutive groups of the graph's convolution run
  /// as one group of `pack` x Cg input and `pack` x Ng output channels, with
  /// a block-diagonal weight matrix whose off-block entries are the weight
  /// zero point (so they add nothing). A depthwise conv then fills the
  /// array's columns with channels and gathers rows of `pack` channels
  /// instead of single bytes. `groups`, `Cg` and `Ng` are the packed ones.
  int64_t pack = 1;
  /// Batch folding: a convolution runs its batch as one image of batch x H
  /// input and batch x OH output rows (NHWC images lie one after another),
  /// so a tile's pixels may span images and its weights serve them all.
  /// `images` is the batch folded into the rows (`batch` is then 1); 1 when
  /// none is. A window never crosses a seam between two images: output row
  /// `oh` reads only its own image's rows, the others are padding (the
  /// im2col gather, lower.cc GatherGeom::row_pixel).
  int64_t images = 1;
  bool b_const = true;   // gemm may multiply two activations
  bool b_trans = false;  // gemm: an activation b read as its transpose, [group][Ng][K] (GEMM b_trans)
  /// Pixel (gemm: row) pitches in DRAM of the input and the output, in
  /// elements; 0 is dense (C and Cout). Larger where the tensor lives inside
  /// a concat's buffer (TensorView).
  int64_t xp = 0, yp = 0;
  int64_t in_pitch() const { return xp ? xp : C; }
  int64_t out_pitch() const { return yp ? yp : Cout; }
  int64_t M() const { return OH * OW; }
  /// Input and output rows of one image (H and OH hold `images` of each).
  int64_t img_h() const { return H / images; }
  int64_t img_oh() const { return OH / images; }
  /// Whether folded images meet at seams a window must not cross: a kernel
  /// taller than one row, padding above, or a stride that does not step
  /// evenly from one image into the next. Without seams the folded batch is
  /// one tall image for every path (row windows, bands, units); with them
  /// only the im2col gather knows the images apart.
  bool seams() const { return images > 1 && (KH != 1 || pt != 0 || img_h() != img_oh() * sh); }
  int64_t K() const { return KH * KW * Cg; }
  int64_t graph_groups() const { return groups * pack; }
  auto operator<=>(const MacGeom&) const = default;
};

/// `g` with its batch folded into its rows (MacGeom::images), and back.
inline MacGeom folded(MacGeom g) {
  g.images *= g.batch, g.H *= g.batch, g.OH *= g.batch, g.batch = 1;
  return g;
}
inline MacGeom unfolded(MacGeom g) {
  g.batch *= g.images, g.H /= g.images, g.OH /= g.images, g.images = 1;
  return g;
}

/// `g` (unpacked) with `p` of its groups packed into each GEMM group.
inline MacGeom packed(MacGeom g, int64_t p) {
  g.groups /= p, g.Cg *= p, g.Ng *= p, g.pack = p;
  return g;
}

/// Pooling window geometry; `global` windows cover the whole image.
struct PoolGeom {
  int64_t batch = 1, H = 1, W = 1, C = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0;
  bool global = false;
  int64_t xp = 0, yp = 0;  // pixel pitches of input and output in DRAM, as MacGeom's
  int64_t in_pitch() const { return xp ? xp : C; }
  int64_t out_pitch() const { return yp ? yp : C; }
  int64_t win() const { return KH * KW; }
};

/// One step of the K loop: kernel positions [pos0, pos0+npos) times input
/// channels [c0, c0+cc) of the group (npos > 1 only when cc is all of Cg).
struct KStep {
  int64_t pos0 = 0, npos = 1, c0 = 0, cc = 0;
  int64_t len() const { return npos * cc; }
};

/// Whether a K step gathers one LOAD per kernel row (lower.cc gather_row)
/// rather than one per kernel position: every channel of an ungrouped
/// convolution, so a window row is contiguous both in NHWC memory and in the
/// im2col row. Lowering and the cost model both decide by this.
inline bool row_gather(const MacGeom& g, const KStep& k) {
  // The widest LOAD row the encoding holds (the spec's `cols` field).
  constexpr int64_t kMaxCols = [] {
    for (const auto& f : spec::LoadInsn::kFields)
      if (f.name == "cols") return (int64_t(1) << f.width) - 1;
    return int64_t(0);
  }();
  return g.groups == 1 && g.KW > 1 && k.c0 == 0 && k.cc == g.C && g.in_pitch() == g.C && g.KW * g.C <= kMaxCols;
}

/// Row windows (Tiling::row_window): a convolution whose K steps are whole
/// kernel rows of every channel reads A straight from loaded input rows. For
/// each K step (kernel row kh) and each run of output pixels within one output
/// row, one LOAD brings the input row, padded to `window_pitch` bytes, and one
/// GEMM reads pixel ow's KW*C-byte window at byte ow*sw*C of it: rows of A
/// overlap (lda = sw*C < k_len = KW*C), so nothing is gathered pixel by pixel.
/// It pays where C is small and the im2col gather is many short bursts (the
/// ResNet-50 stem: 7x7/2 on 3 channels). Lowering and the cost model both
/// decide by these.
/// A grouped convolution's window rows hold the group's Cg channels of each
/// input pixel (one LOAD of W rows of Cg bytes, the image's pixel stride C
/// apart); an ungrouped one's are one contiguous row.
inline int64_t window_pitch(const MacGeom& g) { return ((g.OW - 1) * g.sw + g.KW) * g.Cg; }
inline bool row_window_ok(const MacGeom& g) {
  constexpr int64_t kMax16 = 65535;  // lda, k_len and LOAD cols are 16-bit fields
  return g.KW > 1 && !g.seams() && g.KW * g.Cg <= kMax16 && g.sw * g.Cg <= kMax16 && window_pitch(g) <= kMax16;
}
/// Output-row runs a tile of `tm` pixels can span, whatever pixel it starts
/// at (each run one padded input row in IN), and the IN bytes they take.
inline int64_t window_rows(const MacGeom& g, int64_t tm) { return std::min(tm, tm / g.OW + 2); }
inline int64_t window_in_bytes(const MacGeom& g, int64_t tm) { return window_rows(g, tm) * window_pitch(g); }

/// Image bands (Tiling::band): a convolution of equal strides s = sh = sw
/// whose K steps are whole kernel rows reads A from the padded input rows
/// its tile's output rows need, loaded once for all kernel positions. The
/// rows are split into s x s phase planes: plane (rho, kappa) holds the
/// band's input rows r = rho (mod s) and, of each, the padded columns
/// c = kappa (mod s), Wq = band_wq pixels of Cg bytes a plane row. Output
/// pixel (oh, ow) of the tile is GEMM row (oh - oh0) * Wq + ow, so one GEMM
/// per kernel row kh and column phase kappa (the kernel columns
/// kw = kappa (mod s), consecutive pixels of plane (kh mod s, kappa)) covers
/// the whole tile with lda = Cg; the Wq - OW rows between two output rows are
/// computed and never stored. With s = 1 there is one plane of Wq = OW + KW - 1
/// pixels a row and one GEMM a kernel row. Against row windows every input
/// row is loaded once instead of KH times, and a tile takes KH * min(s, KW)
/// GEMMs instead of KH per output row. Lowering and the cost model both
/// decide by these.
inline bool band_ok(const MacGeom& g) {
  return row_window_ok(g) && g.sh == g.sw && g.sh >= 1 && g.sh <= 4 && g.KH > 1 && g.KW >= g.sw;
}
inline int64_t band_wq(const MacGeom& g) { return ((g.OW - 1) * g.sw + g.KW + g.sw - 1) / g.sw; }
/// Kernel columns of column phase kappa, and the input rows (all phases) a
/// tile spanning `out_rows` output rows reads; plane rows per row phase.
inline int64_t band_phase_cols(const MacGeom& g, int64_t kappa) { return (g.KW - kappa + g.sw - 1) / g.sw; }
inline int64_t band_in_rows(const MacGeom& g, int64_t out_rows) { return (out_rows - 1) * g.sh + g.KH; }
inline int64_t band_plane_rows(const MacGeom& g, int64_t out_rows) {
  return (band_in_rows(g, out_rows) + g.sh - 1) / g.sh;
}
inline int64_t band_plane_bytes(const MacGeom& g, int64_t out_rows) {
  return band_plane_rows(g, out_rows) * band_wq(g) * g.Cg;
}
/// GEMM rows of the tile of `m` pixels from pixel m0: from its first pixel
/// to its last, `Wq` rows an output row.
inline int64_t band_gemm_rows(const MacGeom& g, int64_t m0, int64_t m) {
  const int64_t ow_first = m0 % g.OW, last = m0 + m - 1;
  return (last / g.OW - m0 / g.OW) * band_wq(g) + last % g.OW - ow_first + 1;
}
/// Upper bounds over any tile of `tm` pixels: GEMM rows, and IN bytes (the
/// s x s planes of the input rows its output rows read).
inline int64_t band_max_rows(const MacGeom& g, int64_t tm) {
  return tm + (window_rows(g, tm) - 1) * (band_wq(g) - g.OW);
}
inline int64_t band_in_bytes(const MacGeom& g, int64_t tm) {
  return g.sh * g.sw * band_plane_bytes(g, window_rows(g, tm));
}

/// Depthwise mode (Tiling::depthwise): a convolution with one input and one
/// output channel a group and constant weights runs on the cores' depthwise
/// unit (DWCONV) instead of the array. A tile is whole output rows of one
/// image times a slice of tc channels: IN holds the padded input rows its
/// output rows read (band_in_rows, dw_pitch bytes each: the padded row's
/// pixels, tc bytes a pixel), WGT the KH * KW taps of tc weights, PARAM the
/// tc triples; one DWCONV writes the tile's int32 sums to ACC, one POSTOP
/// requantizes them into OUT and one STORE writes them. Lowering and the
/// cost model both decide by these.
inline bool depthwise_ok(const MacGeom& g) {
  constexpr int64_t kMax4 = 15, kMax16 = 65535;  // kh, kw, stride: 4-bit fields; ow, oh, c: 16-bit
  const int64_t graph_groups = g.groups * g.pack;
  return g.b_const && !g.seams() && graph_groups == g.C && graph_groups == g.Cout && g.KH <= kMax4 && g.KW <= kMax4 &&
         g.sh == g.sw && g.sh >= 1 && g.sh <= kMax4 && g.OW <= kMax16 && g.C <= kMax16;
}
inline int64_t dw_pitch(const MacGeom& g, int64_t tc) { return ((g.OW - 1) * g.sw + g.KW) * tc; }

/// Output-row runs of `m` pixels from pixel m0 (each within one output row).
inline int64_t row_runs(int64_t m0, int64_t m, int64_t ow) {
  if (m <= 0 || ow <= 0) return 0;
  return (m0 + m - 1) / ow - m0 / ow + 1;
}

struct Tiling {
  int64_t tm = 0;             // output pixels per tile (eltwise: elements per chunk)
  int64_t tn = 0;             // output channels per tile (pool: channels per tile)
  std::vector<KStep> ksteps;  // mac only
  bool row_window = false;    // mac only: K steps read A from loaded input rows (row_window_ok)
  bool band = false;          // mac only: one GEMM per kernel row over the tile's input band (band_ok)
  bool depthwise = false;     // mac only: DWCONV tiles of whole output rows x tn channels (depthwise_ok)
  uint64_t bytes_read = 0;    // predicted DRAM traffic of the layer
  uint64_t bytes_written = 0;
};

/// The groups and the channels a group that a mac layer's tiles walk: a
/// depthwise tiling slices all channels as one group.
inline int64_t tile_groups(const MacGeom& g, const Tiling& t) { return t.depthwise ? 1 : g.groups; }
inline int64_t tile_channels(const MacGeom& g, const Tiling& t) { return t.depthwise ? g.Cout : g.Ng; }

/// One unit of work that a core owns: an output tile.
struct Tile {
  int64_t img = 0, group = 0;
  int64_t m0 = 0, m = 0;  // pixels (eltwise: elements)
  int64_t n0 = 0, n = 0;  // channels within the group
};

/// A transpose as a gather (legalize): the output's dims, merged where the
/// input holds them contiguously too, and each one's stride in the input (in
/// elements). The last dim has stride 1: a run of consecutive input bytes,
/// one DMA row; the dim before it (when there is one) steps the rows.
struct Permute {
  std::vector<int64_t> dims, stride;
  int64_t base = 0;  // slice: the input element that output element 0 reads
  bool on() const { return !dims.empty(); }
  int64_t run() const { return dims.back(); }
  /// Rows a LOAD may take in one go (the dim before the run), and their stride.
  int64_t row_count() const { return dims.size() > 1 ? dims[dims.size() - 2] : 1; }
  int64_t row_stride() const { return dims.size() > 1 ? stride[stride.size() - 2] : run(); }
};

/// The gather of transpose `perm` of an input of shape `x`: output dims
/// with their input strides; dims of size 1 dropped, and neighbours merged
/// where the input holds them contiguously as well.
inline Permute permute_of(const std::vector<int64_t>& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> xs(x.size(), 1);
  for (size_t d = x.size(); d-- > 1;) xs[d - 1] = xs[d] * x[d];
  Permute p;
  for (size_t d = 0; d < perm.size(); ++d) {
    const int64_t size = x[size_t(perm[d])], st = xs[size_t(perm[d])];
    if (size == 1) continue;
    if (!p.dims.empty() && p.stride.back() == st * size) {
      p.dims.back() *= size;
      p.stride.back() = st;
    } else {
      p.dims.push_back(size);
      p.stride.push_back(st);
    }
  }
  if (p.dims.empty() || p.stride.back() != 1) p.dims.push_back(1), p.stride.push_back(1);
  return p;
}

/// A slice as a gather: the output dims with the input's strides, merged
/// where the slice keeps whole input rows; base is its first element.
inline Permute slice_of(const std::vector<int64_t>& x, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& y) {
  std::vector<int64_t> xs(x.size(), 1);
  for (size_t d = x.size(); d-- > 1;) xs[d - 1] = xs[d] * x[d];
  Permute p;
  for (size_t d = 0; d < y.size(); ++d) {
    p.base += starts[d] * xs[d];
    if (y[d] == 1) continue;
    if (!p.dims.empty() && p.stride.back() == xs[d] * y[d] && y[d] == x[d]) {
      p.dims.back() *= y[d];
      p.stride.back() = xs[d];
    } else {
      p.dims.push_back(y[d]);
      p.stride.push_back(xs[d]);
    }
  }
  if (p.dims.empty() || p.stride.back() != 1) p.dims.push_back(1), p.stride.push_back(1);
  return p;
}

/// A tensor that lives inside another's buffer (concat in place,
/// concat_in_place.cc): its element e is element
/// (e / width) * pitch + offset + e % width of `base`, which owns the memory.
/// A dense view (pitch == width) is one contiguous slice.
struct TensorView {
  std::string base;
  int64_t width = 0, pitch = 0, offset = 0;
  int64_t elem(int64_t e) const { return (e / width) * pitch + offset + e % width; }
  bool dense() const { return pitch == width; }
};

struct Layer {
  std::string name;  // node name(s), '+'-joined when fused
  size_t node = 0;   // index into CompileState::graph.nodes
  const OpProps* props = nullptr;
  MacGeom mac;
  PoolGeom pool;
  int64_t elems = 0;   // eltwise element count
  int64_t row = 0;     // softmax/layernorm: elements a row (chunks hold whole rows); 0 for other ops
  Permute permute;     // transpose, slice: the gather that reads its input
  int64_t repeat = 0;  // add, mul: b's element count when it repeats over a's leading dims (0: b has a's shape)
  /// The operands an element-wise layer reads a chunk of from memory: two
  /// for an add or mul, one for the others (a lookup's table is loaded
  /// beside its chunk, a concat part copies its one input).
  int64_t operands() const { return props && (props->op == ir::OpKind::Add || props->op == ir::OpKind::Mul) ? 2 : 1; }
  /// concat: one layer per input, each copying (and requantizing) input
  /// `input` into its slice of the output: `rows` rows of `width` elements,
  /// `pitch` elements apart in the output, the first at element `offset`.
  /// The input's rows are `in_pitch` elements apart (0: dense; more where
  /// the input lives inside another concat's buffer).
  struct ConcatPart {
    bool on = false;
    size_t input = 0;
    int64_t rows = 0, width = 0, pitch = 0, offset = 0, in_pitch = 0;
    /// Output element of the part's element e.
    int64_t out_elem(int64_t e) const { return (e / width) * pitch + offset + e % width; }
  } part;
  uint64_t macs = 0;
  Tiling tiling;
  std::vector<Tile> tiles;
  /// Static: the core of each tile. Pipeline: unit * stage cores + the stage
  /// core's position; dynamic: the task within the layer. Lowering emits the
  /// tiles whose value it is given (lower_layer's `core`).
  std::vector<int> core_of_tile;
  int slots_of_tiles = 0;      // pipeline/dynamic: distinct values in core_of_tile
  std::vector<int> task_port;  // dynamic: the memory port each task is spread to
  uint64_t wgt_offset = 0;     // mac: prepacked [group][K][Ng] weights (constant b only)
  uint64_t param_offset =
      0;      // mac: int32 (bias, mult, shift) per output channel; softmax: its table; layernorm: its triples
  Cost cost;  // the cost model's prediction for the chosen tiling
  /// --hls auto (hetero.cc): output pixels (gemm: rows) [unit_row0, M) run
  /// on this HLS unit kernel and the tiles keep [0, unit_row0); empty: cores only.
  std::string unit_kernel;
  int64_t unit_row0 = 0;
  uint64_t unit_cycles = 0;  // the unit's latency model
  /// Grouped conv on a unit: its weights again, in the graph's (and the
  /// unit's) [KH][KW][C/g][M] layout (the memory plan adds the copy).
  uint64_t unit_wgt_offset = 0;
  /// mac: a residual add folded into POSTOP (fuse-residual proposes it, the
  /// tiling pass decides per the fusion policy). The layer then writes `out`
  /// (the add's output) instead of its own output tensor.
  struct Residual {
    bool candidate = false, on = false;
    std::string add;          // the add node's name
    size_t add_node = 0;      // its index into CompileState::graph.nodes
    std::vector<size_t> via;  // reshapes between the layer and the add (graph nodes), absorbed with it
    std::string tensor;       // the other add operand, read into IN per output tile
    bool row = false;         // it is one row of Cout channels, repeated over the pixels (a bias, a constant)
    std::string out;          // the add's output
    int32_t zp = 0, out_zp = 0, lo = -128, hi = 127;
    int32_t mult = 0;  // the other operand's multiplier, on a_shift's grid
    // POSTOP rescale: the conv keeps its own zero point and clamp, and the
    // add sums (x - a_zp) * a_mult and the residual's (r - zp) * mult on one
    // grid (a_shift == shift) and rounds once; out_zp, lo and hi above are
    // the add's.
    int32_t a_zp = 0, a_mult = 0;
    int a_shift = 1;
  } res;
  /// mac: its output requantized once more as it is stored, to the scale of
  /// the concat whose buffer it then writes into (concat in place proposes
  /// it, the tiling pass decides): POSTOP's rescale with a zero residual
  /// term, exactly the concat's copy, which is dropped. `view` is where the
  /// output then lives; the concat's copy is its part `input`.
  struct Rescale {
    bool candidate = false, on = false;
    size_t concat = 0, input = 0;  // the concat's graph node and the input it copies
    TensorView view;
    int32_t a_zp = 0, a_mult = 0, zp = 0, lo = -128, hi = 127;
    int a_shift = 1;
  } rescale;
  const std::string& out_tensor(const ir::Graph& g) const { return res.on ? res.out : g.nodes[node].outputs[0]; }
};

/// Scratchpad bytes a tile may use, after double buffering.
struct Budget {
  int64_t in = 0, wgt = 0, acc = 0, out = 0, param = 0;
  int slots = 1;
  auto operator<=>(const Budget&) const = default;
};
Budget make_budget(const spec::HwConfig& cfg, bool double_buffer);

/// Pipeline placement: emitting layers [first, last] (indices into
/// CompileState::layers) run on `cores`, synchronised per unit (an image, or
/// the whole batch) with the stages before and after it.
struct Stage {
  size_t first = 0, last = 0;
  std::vector<int> cores;
  uint64_t cycles = 0;  // predicted, all units
};

struct CompileState {
  ir::Graph graph;  // working copy: fusion rewrites it
  const spec::HwConfig* cfg = nullptr;
  int cores = 1;  // CompileOptions::num_cores resolved
  Budget budget;
  std::vector<Layer> layers;                      // graph order; alias layers emit no instructions
  std::map<std::string, uint64_t> tensor_offset;  // device offset of every non-constant tensor (and placed constants)
  std::map<std::string, TensorView> tensor_view;  // tensors placed inside another's buffer (concat in place)
  plan::Plan plan;
  std::vector<Decision> decisions;
  std::vector<Stage> stages;                // pipeline placement
  std::optional<uint64_t> pipeline_cycles;  // pipeline placement: predicted, the stages overlapping across images
  int units = 1;                            // pipeline placement: images synchronised one by one (1: the whole batch)
  bool reuse_buffers = true;  // memory plan: liveness reuse (off when pipeline stages run images concurrently)

  const ir::Node& node(const Layer& l) const { return graph.nodes[l.node]; }

  /// The options, as the running pass reads them: each accessor checks that
  /// the pass declares the field (PassInfo::options).
  Fusion fusion() const { return read(PassOption::Fusion).fusion; }
  Hls hls() const { return read(PassOption::Hls).hls; }
  Placement placement() const { return read(PassOption::Placement).placement; }
  int tasks_per_core() const { return read(PassOption::TasksPerCore).tasks_per_core; }
  CompileOptions::RowWindows row_windows() const { return read(PassOption::RowWindows).row_windows; }
  bool group_packing() const { return read(PassOption::GroupPacking).group_packing; }
  CompileOptions::ImageBands image_bands() const { return read(PassOption::ImageBands).image_bands; }
  CompileOptions::Depthwise depthwise() const { return read(PassOption::Depthwise).depthwise; }
  CompileOptions::BatchFold batch_fold() const { return read(PassOption::BatchFold).batch_fold; }
  /// The cost model's parameters (CompileOptions::cost_params, or the configuration's).
  CostParams cost() const { return read(PassOption::CostParams).cost(*cfg); }

  /// Runs `p` over the state, holding it to its declaration: an undeclared
  /// option read or statistic fails it. compile() runs every pass so.
  Status run_pass(class Pass& p);

  /// Records a decision: `choice`, explained by `choice` + `why`.
  void decide(const std::string& node, std::string_view pass, const std::string& choice, const std::string& why,
              std::optional<uint64_t> predicted = std::nullopt, std::vector<Alternative> alternatives = {}) {
    decisions.push_back({node, std::string(pass), choice, choice + why, predicted, std::move(alternatives)});
  }

 private:
  friend Expected<CompileState> make_state(const ir::Graph&, const spec::HwConfig&, const CompileOptions&);
  const CompileOptions& read(PassOption o) const;
  CompileOptions opt_;
  const PassInfo* running_ = nullptr;  // the pass run_pass runs
  mutable std::string undeclared_;     // the first option read that it does not declare
};

/// A pipeline stage: its declaration (name, options read, statistics
/// kept), a run over the shared state, and the statistics it kept.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual const PassInfo& info() const = 0;
  std::string_view name() const { return info().name; }
  virtual Status run(CompileState& s) = 0;
  const std::vector<std::pair<std::string, int64_t>>& statistics() const { return stats_; }
  /// The first statistic kept that info() does not declare (empty: none).
  const std::string& undeclared() const { return undeclared_; }

 protected:
  /// Adds to a statistic, keeping first-use order so output is deterministic.
  void bump(const std::string& key, int64_t v = 1) { stat(key) += v; }
  void set(const std::string& key, int64_t v) { stat(key) = v; }

 private:
  int64_t& stat(const std::string& key);
  std::vector<std::pair<std::string, int64_t>> stats_;
  std::string undeclared_;
};

// The passes, in pipeline order.
std::unique_ptr<Pass> make_fold_channels_pass();    // before legalize: rewrites the graph (fold_channels.cc)
std::unique_ptr<Pass> make_fold_layout_pass();      // before legalize: rewrites the graph (fold_layout.cc)
std::unique_ptr<Pass> make_fold_pointwise_pass();   // before legalize: rewrites the graph (fold_pointwise.cc)
std::unique_ptr<Pass> make_fold_transpose_pass();   // before legalize: rewrites the graph (fold_transpose.cc)
std::unique_ptr<Pass> make_concat_in_place_pass();  // after fuse-residual: concat inputs as views (concat_in_place.cc)
std::unique_ptr<Pass> make_legalize_pass();
std::unique_ptr<Pass> make_fuse_activation_pass();
std::unique_ptr<Pass> make_fuse_residual_pass();
std::unique_ptr<Pass> make_tiling_pass();
/// The tiling pass remembers each conv/gemm layer's tile search by all it
/// reads (the geometry, scratchpads, cores, cost parameters and tile-kind
/// options), per thread, across compiles: repeated blocks and the
/// compiles of one model under other options search once. Off: every layer
/// searches (the tests compare both). Either way the memo is emptied.
void set_tile_search_memo(bool on);
std::unique_ptr<Pass> make_placement_pass();
std::unique_ptr<Pass> make_hls_placement_pass();  // after placement (hetero.cc)
std::unique_ptr<Pass> make_hls_calls_pass();      // after codegen (hetero.cc)
std::unique_ptr<Pass> make_memory_plan_pass();
std::unique_ptr<Pass> make_codegen_pass();

/// Builds the initial state (graph copy, core count, budgets).
Expected<CompileState> make_state(const ir::Graph& g, const spec::HwConfig& cfg, const CompileOptions& opt);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The largest m/n/k_len/lda/rows/cols an instruction's 16-bit fields hold.
inline constexpr int64_t kField16 = 65535;
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace loom::compiler
