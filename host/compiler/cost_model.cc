// The cost model (see cost_model.h and docs/compiler.md, "Cost model").
#include "compiler/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "common/json_read.h"
#include "common/tensor_io.h"
#include "compiler/pass.h"
#include "hw/timing.h"

namespace loom::compiler {
namespace {

using hw::kIssueCycles;
using hw::kMaxOutstanding;
using hw::kRowGapCycles;
using hw::kRowSetupCycles;

uint64_t cdiv(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

hw::TimingParams timing(const CostParams& p) {
  hw::TimingParams t;
  t.rows = uint32_t(p.rows);
  t.cols = uint32_t(p.cols);
  t.mem_bytes = uint32_t(p.mem_bytes);
  t.spw = uint32_t(p.spw);
  t.lanes = std::max(1u, t.spw / 4);
  t.latency = uint32_t(p.latency);
  t.mem_ports = uint32_t(p.ports);
  return t;
}

uint64_t gemm(const CostParams& p, uint64_t m, uint64_t n, uint64_t k, bool acc, bool b_trans = false) {
  spec::GemmInsn g;
  g.m = m, g.n = n, g.k_len = k, g.ldc = 4 * n, g.accumulate = acc, g.b_trans = b_trans;
  return hw::gemm_cycles(timing(p), g);
}
uint64_t postop(const CostParams& p, uint64_t m, uint64_t n, bool rescale) {
  spec::PostopInsn po;
  po.m = m, po.n = n, po.rescale = rescale;
  return hw::postop_cycles(timing(p), po);
}

/// The DMA unit's two walkers on `rows` equal rows of `bt` beats in `bu`
/// bursts, as the tlm platform runs them (CoreModel::dma_rows) on an
/// uncontended port: cycles from the unit's start to its retire. The address
/// walker spends kRowSetupCycles per row, then launches each burst (the
/// memory sees it kAddrCycles later), at most kMaxOutstanding in flight: a
/// read's slot frees with its last beat (first beat after the latency, then
/// one beat a cycle on the port), a write's with its response (latency after
/// its last W beat, registered a cycle later). The row walker of a load
/// consumes the beats as they arrive, with kReadRowGapCycles between rows.
///
/// The exact walk covers the first kWalkRows rows; after that the units run
/// in a steady period (the outstanding window repeats), measured over the
/// last kWalkRows / 2 rows and extrapolated, so the cost stays bounded for
/// long loads.
constexpr uint64_t kWalkRows = 32;

/// The exact walk of the first `walk` (<= kWalkRows) rows: the cycles to the
/// unit's retire after walk / 2 rows and after all of them.
std::pair<uint64_t, uint64_t> dma_walk_rows(uint64_t latency, bool write, uint64_t walk, uint64_t bt, uint64_t bu) {
  uint64_t issue = hw::kDmaStartCycles, rows_done = issue, last = issue, port_free = 0;
  uint64_t ring[kMaxOutstanding] = {};
  size_t head = 0, inflight = 0;
  uint64_t end_half = 0;
  const auto end_now = [&] { return std::max({last, rows_done, issue}) + hw::kDmaRetireCycles; };
  for (uint64_t r = 0; r < walk; ++r) {
    if (r == walk / 2) end_half = end_now();
    issue += kRowSetupCycles;
    for (uint64_t b = 0; b < bu; ++b) {
      const uint64_t beats = b + 1 < bu ? cdiv(bt, bu) : bt - (bu - 1) * cdiv(bt, bu);
      if (inflight == kMaxOutstanding) {
        issue = std::max(issue, ring[head]);
        head = (head + 1) % kMaxOutstanding, --inflight;
      }
      const uint64_t req = issue + hw::kAddrCycles;
      uint64_t done = 0;
      if (write) {
        const uint64_t start = std::max(req, port_free);
        port_free = start + beats;
        done = port_free + latency + 1;
        issue += std::max<uint64_t>(beats + (b + 1 == bu ? kRowGapCycles : 0), hw::kAddrCycles);
      } else {
        const uint64_t start = std::max(req + latency, port_free);
        port_free = start + beats;
        done = port_free;
        issue += hw::kAddrCycles;
        rows_done = std::max(rows_done + beats, done);
      }
      ring[(head + inflight) % kMaxOutstanding] = done, ++inflight;
      last = std::max(last, done);
    }
    rows_done += hw::kReadRowGapCycles;
  }
  return {end_half, end_now()};
}

/// dma_walk_rows, remembered: the tile search costs thousands of tiles a
/// layer whose transfers repeat the same few shapes. One cache a thread,
/// emptied when it grows past kMaxEntries.
std::pair<uint64_t, uint64_t> dma_walk_cached(uint64_t latency, bool write, uint64_t walk, uint64_t bt, uint64_t bu) {
  constexpr size_t kMaxEntries = size_t(1) << 16;
  using Key = std::tuple<uint64_t, bool, uint64_t, uint64_t, uint64_t>;
  thread_local std::map<Key, std::pair<uint64_t, uint64_t>> cache;
  const Key key{latency, write, walk, bt, bu};
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxEntries) cache.clear();
  return cache[key] = dma_walk_rows(latency, write, walk, bt, bu);
}

uint64_t dma_walk(const CostParams& p, bool write, uint64_t rows, uint64_t bt, uint64_t bu) {
  const uint64_t walk = std::min(rows, kWalkRows);
  const auto [end_half, end] = dma_walk_cached(p.latency, write, walk, bt, bu);
  if (rows <= walk) return end;
  // Steady state: the period of the last walk / 2 rows, repeated.
  const uint64_t per_row = cdiv(end - end_half, walk - walk / 2);
  return end + (rows - walk) * per_row;
}

/// Busy cycles and traffic of one unit, accumulated per tile.
struct Acc {
  uint64_t cycles = 0, insns = 0, bursts = 0, beats = 0, bytes = 0;
  void dma(const CostParams& p, bool write, uint64_t rows, uint64_t cols, uint64_t stride, uint64_t times = 1) {
    uint64_t bu = 0, be = 0;
    uint64_t one = dma_cycles(p, write, rows, cols, stride, &bu, &be);
    // Cores that share a port run the same kind of tiles at about the same
    // time, so their transfers overlap: the port serves the beats of all of
    // them. They drift apart after the first bursts (the port serves whole
    // bursts in turn, and the core served first moves on first), so on
    // average a transfer shares the port with half of the others' beats
    // (measured on the RTL: 2 cores on one port, tiny).
    if (p.share > 1 && rows > 0 && cols > 0)
      one =
          std::max(one, kIssueCycles + hw::kDmaStartCycles + hw::kAddrCycles + p.latency + be + (p.share - 1) * be / 2);
    cycles += times * one;
    insns += times;
    bursts += times * bu;
    beats += times * be;
    bytes += times * rows * cols;
  }
};

/// One output tile of one core: per K step the load and compute work, then
/// the store. With double buffering the units overlap step by step.
struct TileCost {
  uint64_t time = 0;  // steady-state cycles the tile adds to its core
  uint64_t first_load = 0, last_tail = 0;
  Acc ld, cp, st;
};

void finish_tile(TileCost& t, const std::vector<std::pair<uint64_t, uint64_t>>& steps, int slots) {
  uint64_t sum = 0;
  for (auto [l, c] : steps) sum += slots > 1 ? std::max(l, c) : l + c;
  t.time = slots > 1 ? std::max(sum, t.st.cycles) : sum + t.st.cycles;
  // Pipeline fill: with the units overlapping step by step, the per-step
  // max(load, compute) leaves out the shorter unit of one step (the first
  // load or the last compute); without overlap nothing is left out.
  t.first_load = steps.empty() || slots < 2 ? 0 : std::min(steps.front().first, steps.front().second);
  t.last_tail = t.st.cycles;
}

/// Pixel runs of `m` consecutive output pixels in rows of `ow`: each run is
/// one gather LOAD per kernel position.
uint64_t runs(uint64_t m, uint64_t ow) {
  if (ow == 0 || m == 0) return 1;
  return std::min<uint64_t>(m, m / ow + (m % ow != 0 ? 1 : 0) + (m > ow && m % ow != 0 ? 1 : 0));
}

/// Output positions o in [0, out) whose input o*s - pad + k lies in [0, in).
int64_t valid_outputs(int64_t out, int64_t in, int64_t k, int64_t s, int64_t pad) {
  int64_t v = 0;
  for (int64_t o = 0; o < out; ++o) v += (o * s - pad + k) >= 0 && (o * s - pad + k) < in;
  return v;
}

/// First output column whose input column for kernel column kw is >= 0, and
/// the end of those whose input column is < W.
int64_t first_col(const MacGeom& g, int64_t kw) {
  const int64_t lo = g.pl - kw;
  return std::min(g.OW, lo <= 0 ? 0 : (lo + g.sw - 1) / g.sw);
}
int64_t end_col(const MacGeom& g, int64_t kw) {
  const int64_t hi = g.W + g.pl - kw;
  return std::min(g.OW, hi <= 0 ? 0 : (hi + g.sw - 1) / g.sw);
}

/// Share of (output pixel, kernel position) pairs whose input pixel lies in
/// the padding.
double pad_share(const MacGeom& g) {
  const auto valid = valid_outputs;
  int64_t ok = 0;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw)
      ok += valid(g.img_oh(), g.img_h(), kh, g.sh, g.pt) * valid(g.OW, g.W, kw, g.sw, g.pl);
  const int64_t all = g.img_oh() * g.OW * g.KH * g.KW;
  return all ? 1.0 - double(ok) / double(all) : 0.0;
}

/// The gather of one K step taken one LOAD per kernel row (row_gather), as
/// lower.cc gather_row issues it, for r pixel runs of `rows` pixels: per
/// kernel row, runs whose input row is padding are one LOAD of padding rows;
/// the others are one LOAD of nkw * C-byte rows for the interior columns and
/// one per position for the edge columns, scaled from a whole output row to
/// the run's length.
void row_gather_cost(const CostParams& p, const MacGeom& g, const KStep& st, uint64_t r, uint64_t rows, Acc& ld) {
  const auto scaled = [&](int64_t cols_of_row) {
    return uint64_t((double(cols_of_row) * double(rows)) / double(g.OW) + 0.5);
  };
  for (int64_t pos = st.pos0; pos < st.pos0 + st.npos;) {
    const int64_t kh = pos / g.KW, kw0 = pos % g.KW;
    const int64_t nkw = std::min(g.KW - kw0, st.pos0 + st.npos - pos), kw1 = kw0 + nkw - 1;
    pos += nkw;
    const uint64_t real =
        uint64_t(double(r) * double(valid_outputs(g.img_oh(), g.img_h(), kh, g.sh, g.pt)) / double(g.img_oh()) + 0.5);
    const uint64_t cols = uint64_t(nkw * g.C), stride = uint64_t(g.sw * g.in_pitch());
    // Runs of padding rows: written a beat a cycle plus the row gap.
    if (r > real) ld.dma(p, false, 0, cols, stride, r - real);
    ld.cycles += (r - real) * rows * (cdiv(cols, p.mem_bytes) + kRowGapCycles);
    if (real == 0) continue;
    const int64_t a = first_col(g, kw0), b = std::max(a, end_col(g, kw1));
    const uint64_t inner = scaled(b - a);
    if (inner > 0) ld.dma(p, false, inner, cols, stride, real);
    if (nkw == 1) continue;
    for (int64_t kw = kw0; kw <= kw1; ++kw) {
      // Edge columns [0, a) and [b, OW) of this position: in the image from
      // first_col(kw) and up to end_col(kw), padding otherwise.
      for (auto [lo, hi] : {std::pair{int64_t(0), a}, std::pair{b, g.OW}}) {
        if (hi <= lo) continue;
        const int64_t in_lo = std::max(lo, first_col(g, kw)), in_hi = std::min(hi, end_col(g, kw));
        const uint64_t in_rows = in_hi > in_lo ? scaled(in_hi - in_lo) : 0;
        const uint64_t pad_rows = scaled(hi - lo) > in_rows ? scaled(hi - lo) - in_rows : 0;
        ld.dma(p, false, in_rows, uint64_t(g.C), stride, real);
        ld.cycles += real * pad_rows * (cdiv(uint64_t(g.C), p.mem_bytes) + kRowGapCycles);
      }
    }
  }
}

/// The loads of one row-window K step (kernel row kh) for r output-row runs,
/// as lower.cc issues them: per run the input row (a LOAD of padding when it
/// lies outside the image) and LOADs of padding for its edge columns.
/// `count` LOADs of one `bytes`-byte padding row (nothing read): written a
/// beat a cycle plus the row gap.
void pad_rows_cost(const CostParams& p, uint64_t bytes, uint64_t count, Acc& ld) {
  if (bytes == 0 || count == 0) return;
  ld.dma(p, false, 0, bytes, bytes, count);
  ld.cycles += count * (cdiv(bytes, p.mem_bytes) + kRowGapCycles);
}

void input_rows_cost(const CostParams& p, const MacGeom& g, uint64_t real, uint64_t padding, Acc& ld);
void row_window_cost(const CostParams& p, const MacGeom& g, int64_t kh, uint64_t r, Acc& ld) {
  const uint64_t real =
      uint64_t(double(r) * double(valid_outputs(g.img_oh(), g.img_h(), kh, g.sh, g.pt)) / double(g.img_oh()) + 0.5);
  input_rows_cost(p, g, real, r - std::min(r, real), ld);
}

/// `real` padded input rows inside the image and `padding` rows outside it,
/// as lower.cc load_input_row issues them.
void input_rows_cost(const CostParams& p, const MacGeom& g, uint64_t real, uint64_t padding, Acc& ld) {
  const int64_t wp = window_pitch(g) / g.Cg;
  const int64_t wr = std::max<int64_t>(0, std::min(g.W, wp - g.pl));
  const bool whole = g.Cg == g.C && g.in_pitch() == g.C;  // else wr rows of Cg bytes, a pixel apart
  const uint64_t cols = uint64_t(whole ? wr * g.C : g.Cg);
  const auto pad = [&](uint64_t bytes, uint64_t count) { pad_rows_cost(p, bytes, count, ld); };
  if (wr > 0) ld.dma(p, false, whole ? 1 : uint64_t(wr), cols, whole ? cols : uint64_t(g.in_pitch()), real);
  pad(uint64_t(std::min(g.pl, wp) * g.Cg), real);
  pad(uint64_t(std::max<int64_t>(0, wp - g.pl - wr) * g.Cg), real);
  pad(uint64_t(window_pitch(g)), padding);
}

/// Of `in_rows` padded input rows of a band (image bands, depthwise), the
/// share outside the image: all output rows read band_in_rows(OH) rows, H
/// of them inside.
uint64_t band_padding_rows(const MacGeom& g, uint64_t in_rows) {
  const uint64_t img_rows = uint64_t(band_in_rows(g, g.OH));
  const uint64_t img_pad = img_rows > uint64_t(g.H) ? img_rows - uint64_t(g.H) : 0;
  return std::min(in_rows, uint64_t(double(img_pad) * double(in_rows) / double(img_rows) + 0.5));
}

/// One image-band tile (band_ok, lower.cc lower_band) of m pixels: its
/// input rows, each in s column-phase planes (the share outside the image as
/// padding), the K x n weights (one LOAD, or one a kernel position when
/// s > 1) and the PARAM slice in one step; KH GEMMs a column phase over the
/// band's GEMM rows, one POSTOP per output row and one STORE.
TileCost band_tile(const CostParams& p, const MacGeom& g, uint64_t m, uint64_t n, int slots) {
  TileCost t;
  const uint64_t r = runs(m, uint64_t(g.OW)), in_rows = uint64_t(band_in_rows(g, int64_t(r)));
  const uint64_t st = uint64_t(g.sw), wq = uint64_t(band_wq(g));
  const uint64_t padding = band_padding_rows(g, in_rows), real = in_rows - padding;
  if (st == 1) {
    input_rows_cost(p, g, real, padding, t.ld);
  } else {
    // Per phase plane: the phase's pixels (W / s rows of Cg bytes), with
    // padding LOADs around them; rows outside the image one padding LOAD.
    const auto pad = [&](uint64_t bytes, uint64_t count) { pad_rows_cost(p, bytes, count, t.ld); };
    const uint64_t cg = uint64_t(g.Cg), px = cdiv(uint64_t(g.W), st);
    t.ld.dma(p, false, px, cg, st * uint64_t(g.in_pitch()), real * st);
    const uint64_t edge = wq > px ? wq - px : 0;
    pad(cg * cdiv(edge, 2), real * st);
    pad(cg * (edge / 2), real * st);
    pad(wq * cg, padding * st);
  }
  if (st == 1)
    t.ld.dma(p, false, uint64_t(g.K()), n, uint64_t(g.Ng));  // the whole B tile
  else
    t.ld.dma(p, false, uint64_t(g.Cg), n, uint64_t(g.Ng), uint64_t(g.KH * g.KW));
  t.ld.dma(p, false, 1, 12 * n, 12 * n);  // PARAM slice
  const uint64_t rows = m + (r - 1) * (wq - uint64_t(g.OW));
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t k = 0; k < std::min(g.sw, g.KW); ++k, ++t.cp.insns)
      t.cp.cycles += gemm(p, rows, n, uint64_t(band_phase_cols(g, k) * g.Cg), kh > 0 || k > 0);
  const uint64_t full = m / uint64_t(g.OW), rem = m % uint64_t(g.OW);  // output rows of the tile
  t.cp.cycles += full * postop(p, uint64_t(g.OW), n, false) + (rem ? postop(p, rem, n, false) : 0);
  t.cp.insns += full + (rem > 0);
  t.st.dma(p, true, m, n, uint64_t(g.out_pitch()));
  finish_tile(t, {{t.ld.cycles, t.cp.cycles}}, slots);
  return t;
}

/// One depthwise tile (depthwise_ok, lower.cc lower_dw) of m pixels (whole
/// output rows) and n channels: its padded input rows (the share outside
/// the image as padding), the taps and the PARAM slice in one step; one
/// DWCONV, one POSTOP, one STORE.
TileCost dw_tile(const CostParams& p, const MacGeom& g, uint64_t m, uint64_t n, int slots) {
  TileCost t;
  const uint64_t rows = m / uint64_t(g.OW), in_rows = uint64_t(band_in_rows(g, int64_t(rows)));
  const uint64_t padding = band_padding_rows(g, in_rows);
  MacGeom v = g;  // the tile's channel slice, as load_input_row reads it
  v.Cg = int64_t(n);
  input_rows_cost(p, v, in_rows - padding, padding, t.ld);
  t.ld.dma(p, false, uint64_t(g.KH * g.KW), n, uint64_t(g.C));
  t.ld.dma(p, false, 1, 12 * n, 12 * n);
  spec::DwconvInsn d;
  d.kh = uint64_t(g.KH), d.kw = uint64_t(g.KW), d.stride = uint64_t(g.sh);
  d.c = n, d.ow = uint64_t(g.OW), d.oh = rows;
  t.cp.cycles = hw::dwconv_cycles(timing(p), d) + postop(p, m, n, false);
  t.cp.insns = 2;
  t.st.dma(p, true, m, n, uint64_t(g.out_pitch()));
  finish_tile(t, {{t.ld.cycles, t.cp.cycles}}, slots);
  return t;
}

TileCost mac_tile(const CostParams& p, const MacGeom& g, uint64_t m, uint64_t n, const std::vector<KStep>& ks,
                  int slots, bool residual, bool rescale, double pad_share, bool window) {
  TileCost t;
  std::vector<std::pair<uint64_t, uint64_t>> steps;
  const uint64_t r = runs(m, uint64_t(g.OW));
  // Equal consecutive K steps cost the same: reuse the previous step's numbers.
  int64_t prev_npos = -1, prev_cc = -1;
  bool prev_acc = false;
  TileCost d;
  for (size_t k = 0; k < ks.size(); ++k) {
    const bool last = k + 1 == ks.size();
    // (A row gather's cost depends on which kernel rows the step covers.)
    if (!last && !window && !row_gather(g, ks[k]) && ks[k].npos == prev_npos && ks[k].cc == prev_cc &&
        (k > 0) == prev_acc) {
      for (auto [dst, src] : {std::pair{&t.ld, &d.ld}, std::pair{&t.cp, &d.cp}}) {
        dst->cycles += src->cycles, dst->insns += src->insns, dst->bursts += src->bursts;
        dst->beats += src->beats, dst->bytes += src->bytes;
      }
      steps.push_back(steps.back());
      continue;
    }
    const TileCost before = t;
    const uint64_t l0 = t.ld.cycles, c0 = t.cp.cycles;
    // im2col gather: one LOAD per kernel row (row_gather) or per kernel
    // position and pixel run; the share of pixels that fall into the
    // padding is written without memory traffic (a beat a cycle plus the
    // row gap).
    const uint64_t rows = cdiv(m, r), cc = uint64_t(ks[k].cc), times = uint64_t(ks[k].npos) * r;
    if (window) {
      row_window_cost(p, g, ks[k].pos0 / g.KW, r, t.ld);
    } else if (row_gather(g, ks[k])) {
      row_gather_cost(p, g, ks[k], r, rows, t.ld);
    } else {
      const uint64_t pad_rows = uint64_t(double(rows) * pad_share + 0.5);
      t.ld.dma(p, false, rows - pad_rows, cc, uint64_t(g.sw * g.in_pitch()), times);
      t.ld.cycles += times * pad_rows * (cdiv(cc, p.mem_bytes) + kRowGapCycles);
    }
    if (g.b_trans)
      t.ld.dma(p, false, n, uint64_t(ks[k].len()), uint64_t(g.K()));  // B tile: n rows of its transpose
    else
      t.ld.dma(p, false, uint64_t(ks[k].len()), n, uint64_t(g.Ng));  // B tile
    if (last) t.ld.dma(p, false, 1, 12 * n, 12 * n);                 // PARAM slice
    if (last && rescale) t.ld.dma(p, false, 1, 8, 8);                // the add's (a_mult, a_shift)
    if (last && residual) t.ld.dma(p, false, m, n, uint64_t(g.Cout));
    if (window) {
      // One GEMM per run, its A rows overlapping in the loaded input row:
      // whole output rows and the remainder (a tile that starts on a row).
      const uint64_t ow = uint64_t(g.OW), full = m / ow, rem = m % ow, tk = uint64_t(ks[k].len());
      if (full > 0) t.cp.cycles += full * gemm(p, ow, n, tk, k > 0);
      if (rem > 0) t.cp.cycles += gemm(p, rem, n, tk, k > 0);
      t.cp.insns += full + (rem > 0);
    } else {
      t.cp.cycles += gemm(p, m, n, uint64_t(ks[k].len()), k > 0, g.b_trans);
      ++t.cp.insns;
    }
    if (last) t.cp.cycles += postop(p, m, n, rescale), ++t.cp.insns;
    steps.emplace_back(t.ld.cycles - l0, t.cp.cycles - c0);
    for (auto [dst, a, b] : {std::tuple{&d.ld, &t.ld, &before.ld}, std::tuple{&d.cp, &t.cp, &before.cp}}) {
      dst->cycles = a->cycles - b->cycles, dst->insns = a->insns - b->insns, dst->bursts = a->bursts - b->bursts;
      dst->beats = a->beats - b->beats, dst->bytes = a->bytes - b->bytes;
    }
    prev_npos = ks[k].npos, prev_cc = ks[k].cc, prev_acc = k > 0;
  }
  t.st.dma(p, true, m, n, uint64_t(g.out_pitch()));
  finish_tile(t, steps, slots);
  return t;
}

TileCost pool_tile(const CostParams& p, const PoolGeom& g, uint64_t m, uint64_t c, int slots) {
  TileCost t;
  if (g.global) {
    t.ld.dma(p, false, uint64_t(g.H * g.W), c, uint64_t(g.in_pitch()));
  } else {
    const uint64_t r = runs(m, uint64_t(g.OW));
    t.ld.dma(p, false, cdiv(m, r), c, uint64_t(g.sw * g.in_pitch()), uint64_t(g.win()) * r);
  }
  spec::PoolInsn pi;
  pi.p = m, pi.win = g.global ? uint64_t(g.H * g.W) : uint64_t(g.win()), pi.c = c;
  t.cp.cycles = hw::pool_cycles(timing(p), pi), t.cp.insns = 1;
  t.st.dma(p, true, m, c, uint64_t(g.out_pitch()));
  finish_tile(t, {{t.ld.cycles, t.cp.cycles}}, slots);
  return t;
}

/// lower.cc gather_permuted: rows of one run, a LOAD per stretch along the row dim.
void gather(const CostParams& p, const Permute& pm, uint64_t count, Acc& ld) {
  const uint64_t run = std::min<uint64_t>(uint64_t(pm.run()), count);
  const uint64_t rows = cdiv(count, run);
  const uint64_t loads = cdiv(rows, std::min<uint64_t>(uint64_t(pm.row_count()), 65535));
  ld.dma(p, false, cdiv(rows, loads), run, uint64_t(pm.row_stride()), loads);
}

TileCost eltwise_tile(const CostParams& p, uint64_t count, int operands, int slots, const Permute& pm, bool lut,
                      const Layer::ConcatPart& part) {
  TileCost t;
  if (lut) {
    // lower.cc: the chunk and the 256-byte table.
    t.ld.dma(p, false, 1, count, count);
    t.ld.dma(p, false, 1, 256, 256);
  } else if (pm.on()) {
    gather(p, pm, count, t.ld);
  } else if (part.on && part.in_pitch && uint64_t(part.width) <= count) {  // lower.cc: whole rows, in_pitch apart
    t.ld.dma(p, false, count / uint64_t(part.width), uint64_t(part.width), uint64_t(part.in_pitch));
  } else {
    t.ld.dma(p, false, 1, count, count, uint64_t(operands));
  }
  spec::EltwiseInsn e;
  e.count = count;
  e.lut = lut;
  t.cp.cycles = hw::eltwise_cycles(timing(p), e), t.cp.insns = 1;
  if (part.on && uint64_t(part.width) <= count)  // lower.cc store_part: whole rows of the slice
    t.st.dma(p, true, count / uint64_t(part.width), uint64_t(part.width), uint64_t(part.pitch));
  else
    t.st.dma(p, true, 1, count, count);
  finish_tile(t, {{t.ld.cycles, t.cp.cycles}}, slots);
  return t;
}

/// softmax / layernorm (lower.cc lower_rows): `count` elements in rows of
/// `row`, one LOAD, one ROWNORM, one STORE (the layer's one PARAM load is
/// left out: at most 12 bytes a channel once).
TileCost rows_tile(const CostParams& p, uint64_t count, uint64_t row, bool ln, int slots) {
  TileCost t;
  const uint64_t rows = count / row;
  t.ld.dma(p, false, rows, row, row);
  spec::RownormInsn r;
  r.ln = ln;
  r.m = rows;
  r.n = row;
  t.cp.cycles = hw::rownorm_cycles(timing(p), r), t.cp.insns = 1;
  t.st.dma(p, true, rows, row, row);
  finish_tile(t, {{t.ld.cycles, t.cp.cycles}}, slots);
  return t;
}

/// Adds `count` tiles like `t` to the layer totals.
struct Totals {
  uint64_t tiles = 0, time = 0, first_load = 0, last_tail = 0, max_time = 0;
  std::vector<std::pair<uint64_t, uint64_t>> classes;  // (tiles, cycles per tile)
  /// Round-robin spreads every class evenly, so the busiest core gets at
  /// most ceil(count / cores) tiles of each, and at most `per_core` tiles.
  uint64_t busiest(uint64_t cores, uint64_t per_core) const {
    uint64_t by_class = 0;
    for (auto [n, t] : classes) by_class += cdiv(n, cores) * t;
    return std::min(by_class, per_core * max_time);
  }
  Acc ld, cp, st;
  void add(const TileCost& t, uint64_t count) {
    if (count == 0) return;
    tiles += count;
    time += count * t.time;
    max_time = std::max(max_time, t.time);
    classes.emplace_back(count, t.time);
    first_load = std::max(first_load, t.first_load);
    last_tail = std::max(last_tail, t.last_tail);
    for (auto [dst, src] : {std::pair{&ld, &t.ld}, std::pair{&cp, &t.cp}, std::pair{&st, &t.st}}) {
      dst->cycles += count * src->cycles;
      dst->insns += count * src->insns;
      dst->bursts += count * src->bursts;
      dst->beats += count * src->beats;
      dst->bytes += count * src->bytes;
    }
  }
};

/// Edge classes of a 2-D tiling: full and last tiles along each dimension;
/// `f(m, n, count, last_m, last_n)`.
template <class F>
void classes(uint64_t M, uint64_t tm, uint64_t N, uint64_t tn, uint64_t reps, F&& f) {
  const uint64_t nm = cdiv(M, tm), nn = cdiv(N, tn);
  const uint64_t ml = M - (nm - 1) * tm, nl = N - (nn - 1) * tn;
  f(tm, tn, reps * (nm - 1) * (nn - 1), 0, 0);
  f(ml, tn, reps * (nn - 1), 1, 0);
  f(tm, nl, reps * (nm - 1), 0, 1);
  f(ml, nl, reps, 1, 1);
}

/// Cycles of one edge class of tiles: steady-state time, and the pipeline
/// fill (first load) and tail (last store) when such a tile starts or ends
/// a core's run.
struct ClassTime {
  uint64_t time = 0, first_load = 0, last_tail = 0;
  void set(const TileCost& t) { time = t.time, first_load = t.first_load, last_tail = t.last_tail; }
};

/// The busiest core's cycles under static round-robin placement: the tiles
/// in placement order (repetition = image and group, then M tile, then N
/// tile), tile i on core i % cores; `ct[last_m][last_n]` the cycles of each
/// edge class; a core pays the fill of its first tile and the tail of its
/// last. 0 when the layer has too many tiles to walk (the caller then keeps
/// its class bound).
uint64_t round_robin_busiest(uint64_t reps, uint64_t nm, uint64_t nn, const ClassTime (&ct)[2][2], uint64_t cores) {
  constexpr uint64_t kMaxWalk = uint64_t(1) << 16;
  if (cores == 0 || reps * nm * nn > kMaxWalk) return 0;
  struct Core {
    uint64_t sum = 0;
    const ClassTime* first = nullptr;
    const ClassTime* last = nullptr;
  };
  std::vector<Core> per(cores);
  uint64_t i = 0;
  for (uint64_t r = 0; r < reps; ++r)
    for (uint64_t mi = 0; mi < nm; ++mi)
      for (uint64_t ni = 0; ni < nn; ++ni, ++i) {
        Core& c = per[i % cores];
        const ClassTime& k = ct[mi + 1 == nm][ni + 1 == nn];
        c.sum += k.time;
        if (!c.first) c.first = &k;
        c.last = &k;
      }
  uint64_t worst = 0;
  for (const Core& c : per)
    if (c.first) worst = std::max(worst, c.sum + c.first->first_load + c.last->last_tail);
  return worst;
}

}  // namespace

std::string Cost::summary() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "predicted %llu cycles (busiest core %llu: load %llu, compute %llu, store %llu; busiest port %llu), "
                "DRAM %llu B read + %llu B written, %llu insns, %llu bursts of %.1f beats",
                (unsigned long long)cycles, (unsigned long long)core_cycles, (unsigned long long)load_cycles,
                (unsigned long long)compute_cycles, (unsigned long long)store_cycles, (unsigned long long)port_cycles,
                (unsigned long long)dram_read, (unsigned long long)dram_written, (unsigned long long)insns,
                (unsigned long long)bursts, beats_per_burst());
  return buf;
}

uint64_t gather_cycles(const CostParams& p, const Permute& pm, uint64_t count) {
  Acc ld;
  gather(p, pm, count, ld);
  return ld.cycles;
}

CostParams CostParams::from(const spec::HwConfig& cfg) {
  const auto t = hw::TimingParams::from(cfg);
  CostParams p;
  p.rows = t.rows, p.cols = t.cols, p.mem_bytes = t.mem_bytes, p.spw = t.spw, p.latency = t.latency;
  p.ports = t.mem_ports;
  return p;
}

namespace {

Error file_error(const std::string& path, const std::string& what) { return make_error(path, what); }

}  // namespace

Expected<CostParams> read_cost_params(const std::string& path, const spec::HwConfig& cfg) {
  auto text = read_file_bytes(path);
  if (!text) return text.error();
  // Bounded nesting, and every lookup through field(): the file is the user's.
  auto doc = parse_json(*text, path);
  if (!doc) return doc.error();
  const nlohmann::ordered_json& j = *doc;
  if (!j.is_object()) return file_error(path, "expected a JSON object");
  if (field(j, "kind") != "loom-cost-params") return file_error(path, "field 'kind' must be \"loom-cost-params\"");
  const auto& version = field(j, "version");
  if (!version.is_number_integer() || version.get<int64_t>() != 1)
    return file_error(path, "field 'version' must be 1 (the only cost-params format)");
  const auto& config = field(j, "config");
  if (!config.is_string())
    return file_error(path, "field 'config' must name the configuration the parameters were fitted for");
  if (config.get<std::string>() != cfg.name)
    return file_error(path, "field 'config': fitted for '" + excerpt(config.get<std::string>()) + "', compiling for '" +
                                std::string(cfg.name) + "'");
  CostParams p = CostParams::from(cfg);
  for (const auto& [k, v] : j.items()) {
    if (k == "kind" || k == "version" || k == "config" || k == "fit") continue;
    if (k == "latency") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 100000)
        return file_error(path, "field 'latency' must be an integer number of cycles in 0..100000");
      p.latency = v.get<uint64_t>();
    } else if (k == "layer_cycles" || k == "insn_cycles") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > 1e9)
        return file_error(path, "field '" + k + "' must be a finite number of cycles (|x| <= 1e9)");
      (k == "layer_cycles" ? p.layer_cycles : p.insn_cycles) = v.get<double>();
    } else {
      return file_error(path, "unknown field '" + excerpt(k) + "' (latency, layer_cycles, insn_cycles, fit)");
    }
  }
  return p;
}

std::string cost_params_text(const CostParams& p, const spec::HwConfig& cfg, const std::string& fit_json) {
  nlohmann::ordered_json j;
  j["kind"] = "loom-cost-params";
  j["version"] = 1;
  j["config"] = std::string(cfg.name);
  j["latency"] = p.latency;
  j["layer_cycles"] = p.layer_cycles;
  j["insn_cycles"] = p.insn_cycles;
  if (!fit_json.empty()) j["fit"] = nlohmann::ordered_json::parse(fit_json);
  return j.dump(2) + "\n";
}

uint64_t dma_cycles(const CostParams& p, bool write, uint64_t rows, uint64_t cols, uint64_t stride, uint64_t* bursts,
                    uint64_t* beats) {
  // Beats of a row: unaligned rows (stride not a multiple of the beat) touch
  // one more beat half of the time. Bursts: at most 256 beats, never across
  // a 4 KiB page.
  const uint64_t mb = p.mem_bytes;
  uint64_t bt = cdiv(cols, mb);
  if (rows > 1 && stride % mb != 0 && cols % mb != 1) bt += 1;
  const uint64_t bu = std::max<uint64_t>(cdiv(bt, 256), cdiv(cols, 4096));
  if (bursts) *bursts = rows * bu;
  if (beats) *beats = rows * bt;
  const uint64_t fixed = kIssueCycles + hw::kDmaStartCycles;
  if (rows == 0 || cols == 0) return fixed;
  return kIssueCycles + dma_walk(p, write, rows, bt, bu);
}

uint64_t barrier_cycles() { return 2 * kIssueCycles; }

uint64_t cycles_floor(const CostParams& p, const Layer& l, int cores, bool residual_in) {
  const Tiling& t = l.tiling;
  // A correction adds layer_cycles + insn_cycles x instructions; with
  // insn_cycles >= 0 (as the refit fits it) it adds at least layer_cycles.
  if (p.insn_cycles < 0 || l.props->kind != LayerKind::Mac || t.depthwise || t.band || t.row_window) return 0;
  const MacGeom& g = l.mac;
  const bool rescale = residual_in || l.rescale.on;  // as estimate's mac_tile
  uint64_t total = 0, tiles = 0, least = UINT64_MAX;
  classes(uint64_t(g.M()), uint64_t(std::max<int64_t>(t.tm, 1)), uint64_t(tile_channels(g, t)),
          uint64_t(std::max<int64_t>(t.tn, 1)), uint64_t(g.batch * tile_groups(g, t)),
          [&](uint64_t m, uint64_t n, uint64_t count, int, int) {
            if (count == 0) return;
            uint64_t c = postop(p, m, n, rescale);
            for (size_t k = 0; k < t.ksteps.size(); ++k)
              c += gemm(p, m, n, uint64_t(t.ksteps[k].len()), k > 0, g.b_trans);
            total += count * c, tiles += count, least = std::min(least, c);
          });
  if (tiles == 0) return 0;
  // The busiest core computes at least the average, and at least its
  // ceil(tiles / used) tiles at the cheapest class's cycles.
  const uint64_t used = std::min<uint64_t>(uint64_t(std::max(cores, 1)), tiles);
  const uint64_t floor = std::max(cdiv(total, used), cdiv(tiles, used) * least) + barrier_cycles();
  if (!p.corrected()) return floor;
  const double v = std::floor(double(floor) + p.layer_cycles);
  return v <= 0 ? 0 : uint64_t(v);
}

Cost estimate(const CostParams& p0, const Layer& l, int cores, int slots, bool residual_in) {
  Cost c;
  Totals tot;
  // Tiles in placement order: `reps` repetitions of nm x nn.
  uint64_t reps = 1, nm = 1, nn = 1;
  switch (l.props->kind) {
    case LayerKind::Alias:
      return c;
    case LayerKind::Mac:
      reps = uint64_t(l.mac.batch * tile_groups(l.mac, l.tiling));
      nm = cdiv(uint64_t(l.mac.M()), uint64_t(std::max<int64_t>(l.tiling.tm, 1)));
      nn = cdiv(uint64_t(tile_channels(l.mac, l.tiling)), uint64_t(std::max<int64_t>(l.tiling.tn, 1)));
      break;
    case LayerKind::Pool:
      reps = uint64_t(l.pool.batch);
      nm = cdiv(uint64_t(l.pool.OH * l.pool.OW), uint64_t(std::max<int64_t>(l.tiling.tm, 1)));
      nn = cdiv(uint64_t(l.pool.C), uint64_t(std::max<int64_t>(l.tiling.tn, 1)));
      break;
    case LayerKind::Eltwise:
      nm = cdiv(uint64_t(l.elems), uint64_t(std::max<int64_t>(l.tiling.tm, 1)));
      break;
  }
  const uint64_t ntiles = std::max<uint64_t>(reps * nm * nn, 1);
  const uint64_t active = std::min<uint64_t>(uint64_t(std::max(cores, 1)), ntiles);
  CostParams p = p0;
  p.share = cdiv(active, std::min<uint64_t>(p.ports, active));  // cores streaming through one port together
  ClassTime ct[2][2] = {};
  switch (l.props->kind) {
    case LayerKind::Alias:
      return c;
    case LayerKind::Mac: {
      const MacGeom& g = l.mac;
      const Tiling& t = l.tiling;
      classes(uint64_t(g.M()), uint64_t(t.tm), uint64_t(tile_channels(g, t)), uint64_t(t.tn), reps,
              [&, ps = pad_share(g)](uint64_t m, uint64_t n, uint64_t count, int lm, int ln) {
                const TileCost tc = t.depthwise ? dw_tile(p, g, m, n, slots)
                                    : t.band    ? band_tile(p, g, m, n, slots)
                                                : mac_tile(p, g, m, n, t.ksteps, slots, residual_in && !l.rescale.on,
                                                           residual_in || l.rescale.on, ps, t.row_window);
                ct[lm][ln].set(tc);
                if (count) tot.add(tc, count);
              });
      int64_t tk = 0;
      for (const auto& k : t.ksteps) tk = std::max(tk, k.len());
      const int64_t a_in = t.depthwise    ? band_in_rows(g, t.tm / g.OW) * dw_pitch(g, t.tn)
                           : t.band       ? band_in_bytes(g, t.tm)
                           : t.row_window ? window_in_bytes(g, t.tm)
                                          : t.tm * tk;
      const int64_t c_rows = t.band ? band_max_rows(g, t.tm) : t.tm;
      c.sp_in = uint64_t(a_in + (residual_in || l.rescale.on ? t.tm * t.tn : 0));
      c.sp_wgt = uint64_t((t.depthwise ? g.KH * g.KW : t.band ? g.K() : tk) * t.tn);
      c.sp_out = uint64_t(t.tm * t.tn);
      c.sp_acc = uint64_t(4 * c_rows * t.tn);
      c.sp_param = uint64_t(12 * t.tn);
      break;
    }
    case LayerKind::Pool: {
      const PoolGeom& g = l.pool;
      const Tiling& t = l.tiling;
      classes(uint64_t(g.OH * g.OW), uint64_t(t.tm), uint64_t(g.C), uint64_t(t.tn), reps,
              [&](uint64_t m, uint64_t n, uint64_t count, int lm, int ln) {
                const TileCost tc = pool_tile(p, g, m, n, slots);
                ct[lm][ln].set(tc);
                if (count) tot.add(tc, count);
              });
      c.sp_in = uint64_t(t.tm * (g.global ? g.H * g.W : g.win()) * t.tn);
      c.sp_out = uint64_t(t.tm * t.tn);
      break;
    }
    case LayerKind::Eltwise: {
      const int operands = int(l.operands());
      const uint64_t E = uint64_t(l.elems), tm = uint64_t(std::max<int64_t>(l.tiling.tm, 1));
      const uint64_t n = cdiv(E, tm);
      const bool lut = l.props->op == ir::OpKind::Lut;
      const bool ln = l.props->op == ir::OpKind::LayerNorm;
      const uint64_t row = uint64_t(l.row);
      const TileCost full = row ? rows_tile(p, tm, row, ln, slots)
                                : eltwise_tile(p, tm, operands, slots, l.permute, lut, l.part),
                     last = row ? rows_tile(p, E - (n - 1) * tm, row, ln, slots)
                                : eltwise_tile(p, E - (n - 1) * tm, operands, slots, l.permute, lut, l.part);
      tot.add(full, n - 1);
      tot.add(last, 1);
      ct[0][0].set(full), ct[0][1].set(full);
      ct[1][0].set(last), ct[1][1].set(last);
      c.sp_in = uint64_t(operands) * tm;
      c.sp_out = tm;
      if (row) c.sp_param = ln ? 12 * row : 512;
      break;
    }
  }
  const uint64_t used = std::min<uint64_t>(uint64_t(std::max(cores, 1)), std::max<uint64_t>(tot.tiles, 1));
  const uint64_t per_core = cdiv(tot.tiles, used);  // round-robin: the busiest core's tiles
  const auto share = [&](uint64_t v) { return tot.tiles ? v * per_core / tot.tiles : 0; };
  c.tiles = int(tot.tiles);
  c.cores_used = int(used);
  c.load_cycles = share(tot.ld.cycles);
  c.compute_cycles = share(tot.cp.cycles);
  c.store_cycles = share(tot.st.cycles);
  c.core_cycles = round_robin_busiest(reps, nm, nn, ct, used);
  if (c.core_cycles == 0) c.core_cycles = tot.busiest(used, per_core) + tot.first_load + tot.last_tail;
  // Cores c, c + ports, ... share a port; reads and writes use separate channels.
  const uint64_t on_port = cdiv(used, std::min<uint64_t>(p.ports, used));
  const uint64_t port_beats = std::max(tot.ld.beats, tot.st.beats) * on_port / used;
  c.port_cycles = port_beats + p.latency;
  c.cycles = std::max(c.core_cycles, c.port_cycles) + barrier_cycles();
  c.dram_read = tot.ld.bytes;
  c.dram_written = tot.st.bytes;
  c.insns = tot.ld.insns + tot.cp.insns + tot.st.insns;
  c.core_insns = share(c.insns);
  if (p.corrected()) {
    const double v = double(c.cycles) + p.correction(double(c.core_insns));
    c.cycles = v <= 0 ? 0 : uint64_t(std::llround(v));
  }
  c.bursts = tot.ld.bursts + tot.st.bursts;
  c.beats = tot.ld.beats + tot.st.beats;
  return c;
}

}  // namespace loom::compiler
