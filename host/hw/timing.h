// Instruction timing of the tlm model: cycle formulas for the compute unit
// and DMA burst splitting, derived from the configuration and the RTL's
// microarchitecture documented in docs/rtl-core.md and in the headers of the
// rtl/core units (outstanding bursts, GEMM staging, element datapath).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/spec_gen.h"

namespace loom::hw {

/// Timing parameters, all taken from a spec::HwConfig.
struct TimingParams {
  uint32_t rows = 1;       // systolic array rows
  uint32_t cols = 1;       // systolic array columns
  uint32_t mem_bytes = 8;  // bytes per memory beat (mem_width_bits / 8)
  uint32_t spw = 16;       // scratchpad port width in bytes: max(Cols*4, MemBytes)
  uint32_t lanes = 4;      // post-processing lanes: int32 words per ACC read (spw / 4)
  uint32_t latency = 40;   // memory latency in cycles
  uint32_t mem_ports = 1;

  static TimingParams from(const spec::HwConfig& cfg) {
    TimingParams p;
    p.rows = std::max(1u, cfg.array_rows);
    p.cols = std::max(1u, cfg.array_cols);
    p.mem_bytes = std::max(1u, cfg.mem_width_bits / 8);
    p.spw = std::max(p.cols * 4, p.mem_bytes);
    p.lanes = p.spw / 4;
    p.latency = cfg.mem_latency_cycles;
    p.mem_ports = std::max(1u, cfg.mem_ports);
    return p;
  }
};

/// Fixed cost of handing an instruction to a unit and starting it.
inline constexpr uint64_t kIssueCycles = 2;
/// Idle cycle the DMA row walkers spend between rows (a store's address
/// walker: after a row's last W beat, hidden when the burst is shorter than
/// its launch).
inline constexpr uint64_t kRowGapCycles = 1;
/// Cycles a load's row writer spends between real rows: the row gap and the
/// flush of the gather buffer's last partial write (measured on the RTL with
/// 16 bursts in flight, where rows arrive back to back).
inline constexpr uint64_t kReadRowGapCycles = 2;
/// LOAD/STORE: the unit's check and dependency-token states before its
/// walkers start (StIdle -> StDep -> StRun in loom_load_unit/loom_store_unit).
inline constexpr uint64_t kDmaStartCycles = 2;
/// Address walker: one cycle to set up each row's first burst.
inline constexpr uint64_t kRowSetupCycles = 1;
/// Address walker: a burst's launch and handshake cycles; the memory sees the
/// request one cycle after the handshake (and answers latency cycles later).
inline constexpr uint64_t kAddrCycles = 2;
/// LOAD/STORE: from the last beat or response to the retire pulse.
inline constexpr uint64_t kDmaRetireCycles = 0;
/// Fixed cost of an element instruction (POSTOP, POOL, ELTWISE) besides its
/// beats and reads: loom_elem_ctrl's start and done handshakes and the fill
/// and drain of loom_postop (two 5-stage loom_requant pipelines a lane and
/// the clamp/OUT-write stages), measured on the RTL.
inline constexpr uint64_t kPipeCycles = 11;
/// POSTOP: cycles to load one chunk's PARAM triples (three reads) before its
/// first row, and the shift check of a chunk in the scan.
inline constexpr uint64_t kParamLoadCycles = 4;
inline constexpr uint64_t kScanCheckCycles = 1;
/// POSTOP rescale: reading and checking the add's (a_mult, a_shift) pair
/// (two cycles) and the fill of loom_postop's stage A (a third 5-stage
/// requantizer).
inline constexpr uint64_t kRescaleCycles = 7;
/// Fixed cost of a GEMM beyond the array's fill, blocks and drain: the
/// compute unit's check and the controller's start and done handshakes
/// (measured on the RTL: 3 cycles on tiny and small, for any shape).
inline constexpr uint64_t kGemmFixedCycles = 3;
/// Bursts a load or store unit keeps in flight (loom_core's DmaOutstanding,
/// passed to loom_load_unit / loom_store_unit as MaxOutstanding).
inline constexpr unsigned kMaxOutstanding = 16;

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// GEMM (loom_gemm_ctrl): the output is tiled into Rows x Cols blocks. A is
/// staged per SpW-byte chunk of k into double buffers, so after the first
/// chunk's staging (Rows reads) the array takes one beat a cycle: a block
/// costs k cycles, but last beats are spaced at least max(Rows, Cols) apart.
/// The last block's rows drain through the array (Cols + 2) and are written
/// back one row a cycle (two with accumulate, which also delays every later
/// block by its rows). When rows of C alias
/// (ldc < 4n) the RTL runs one-row blocks. With b_trans B is staged beside A
/// (a column of B a read), so the first chunk stages in max(Rows, Cols).
inline uint64_t gemm_cycles(const TimingParams& t, const spec::GemmInsn& g) {
  if (g.m == 0 || g.n == 0) return kIssueCycles;
  const uint64_t block_rows = (g.m > 1 && g.ldc < 4 * g.n) ? 1 : t.rows;
  const uint64_t blocks = ceil_div(g.m, block_rows) * ceil_div(g.n, t.cols);
  const uint64_t per_block = std::max<uint64_t>(g.k_len, std::max(t.rows, t.cols));
  const uint64_t writeback = std::min<uint64_t>(g.m, block_rows) * (g.accumulate ? 2 : 1);
  // With accumulate, a block's read-modify-write rows (read, then write the
  // next cycle) hold the ACC port, so every block after the first waits
  // block_rows cycles for the previous block's write-back.
  const uint64_t acc_wait = g.accumulate ? (blocks - 1) * block_rows : 0;
  const uint64_t stage = g.b_trans ? std::max(t.rows, t.cols) : t.rows;
  return kIssueCycles + kGemmFixedCycles + stage + blocks * per_block + acc_wait + t.cols + 2 + writeback;
}

/// POSTOP (loom_elem_ctrl): the tile is walked in chunks of `lanes`
/// channels. Every chunk's shifts are scanned first (its PARAM triples read
/// and checked); then each chunk loads its triples and streams its m rows,
/// one beat of `lanes` elements a cycle. A single chunk keeps the scanned
/// triples.
inline uint64_t postop_cycles(const TimingParams& t, const spec::PostopInsn& p) {
  const uint64_t chunks = ceil_div(p.n, t.lanes);
  const uint64_t scan = chunks * (kParamLoadCycles + kScanCheckCycles);
  const uint64_t stream = chunks == 1 ? p.m : chunks * (kParamLoadCycles + p.m);
  return kIssueCycles + kPipeCycles + scan + stream + (p.rescale ? kRescaleCycles : 0);
}
/// POOL: per output pixel and SpW-channel chunk, win reads and two cycles
/// to capture the last row and turn to feeding, then `lanes` channels a
/// beat, not overlapped.
inline uint64_t pool_cycles(const TimingParams& t, const spec::PoolInsn& p) {
  return kIssueCycles + kPipeCycles + p.p * (ceil_div(p.c, t.spw) * (p.win + 2) + ceil_div(p.c, t.lanes));
}
/// ELTWISE: three read cycles for the first SpW-byte chunk of A and B,
/// then `lanes` elements a beat, back to back (each later chunk is read
/// while the one before is fed). With lut the 256-byte table is first
/// loaded into the element unit's table register (256 / SpW reads and a
/// cycle for the last to arrive), then A streams as a beat pass: `lanes`
/// lookups a cycle, each chunk read with the last beat of the one before.
inline uint64_t eltwise_cycles(const TimingParams& t, const spec::EltwiseInsn& e) {
  if (e.count == 0) return kIssueCycles + kPipeCycles;
  if (e.lut) return kIssueCycles + kPipeCycles + ceil_div(256, t.spw) + 1 + ceil_div(e.count, t.lanes);
  return kIssueCycles + kPipeCycles + 3 + ceil_div(e.count, t.lanes);
}

/// ROWNORM (loom_elem_ctrl). Softmax loads its 512-byte table once (one
/// PARAM read per SpW bytes, then a cycle for the last window); per row a
/// max pass (one IN read per SpW bytes and a cycle for the last to arrive),
/// a sum pass and an output pass of `lanes` elements a beat, and a 32-step
/// restoring division between them. Layer normalization first scans every
/// channel's shift as POSTOP does (a chunk of `lanes` triples: three reads
/// and a check); per row a statistics pass like softmax's max pass, the
/// variance (two cycles on one shared multiplier, the second also scaling it
/// into [2^60, 2^62)), a 31-step square root, a 43-step division, the two row products n * r and S1 * r, then per beat
/// three PARAM reads (the beat is fed as the third arrives, the next beat's
/// first read beside it) and one cycle to start the pass.
inline uint64_t rownorm_cycles(const TimingParams& t, const spec::RownormInsn& r) {
  // Empty: the unit's check, token and retire cycles.
  if (r.m == 0 || r.n == 0) return kIssueCycles + 2;
  const uint64_t reads = ceil_div(r.n, t.spw), beats = ceil_div(r.n, t.lanes);
  if (!r.ln) return kIssueCycles + kPipeCycles + ceil_div(512, t.spw) + 1 + r.m * (reads + 1 + 2 * beats + 32);
  const uint64_t scan = beats * (kParamLoadCycles + kScanCheckCycles);
  return kIssueCycles + kPipeCycles + scan + r.m * (reads + 1 + 2 + 31 + 43 + 2 + 3 * beats + 1);
}

/// DWCONV (loom_dw_ctrl): output pixels in order, each in chunks of SpW
/// channels; a chunk reads one input pixel and one tap a cycle (IN and WGT
/// side by side), kh * kw cycles, into SpW lane accumulators, then hands its
/// sums to the writer, which stores them to ACC as ceil(4 * len / SpW)
/// SpW-byte writes while the next chunk accumulates: a chunk's last read
/// waits until the writes of the chunk before it are done, so a chunk takes
/// max(taps, writes of the chunk before) cycles, the instruction's first
/// chunk just its taps. Fixed: the start cycle and three setup cycles (stride
/// * c and stride * ldi by shift-and-add), the last product's cycle, the
/// done and retire handshakes, then the last chunk's writes.
inline constexpr uint64_t kDwFixedCycles = 7;
inline uint64_t dwconv_cycles(const TimingParams& t, const spec::DwconvInsn& d) {
  const uint64_t pixels = d.oh * d.ow;
  // Empty: the unit's check, token and retire cycles.
  if (pixels == 0 || d.c == 0) return kIssueCycles + 2;
  const uint64_t taps = d.kh * d.kw, full = d.c / t.spw, rem = d.c % t.spw;
  const uint64_t w_full = 4, w_rem = ceil_div(4 * rem, t.spw);
  const uint64_t last_w = rem ? w_rem : w_full;
  // Per pixel: the full chunks, then the partial one; a chunk's slot is its
  // taps or the writes of the chunk before it, whichever is longer.
  const uint64_t chunks = full + (rem ? 1 : 0);
  uint64_t per_pixel = 0;
  for (uint64_t i = 0; i < chunks; ++i) per_pixel += std::max(taps, i == 0 ? last_w : w_full);
  // The instruction's first chunk follows no writes.
  const uint64_t first_wait = std::max(taps, last_w) - taps;
  return kIssueCycles + kDwFixedCycles + pixels * per_pixel - first_wait + last_w;
}

/// One AXI burst: start address (beat-aligned) and beats.
struct Burst {
  uint64_t addr = 0;
  uint32_t beats = 0;
};

/// Splits a row [addr, addr + bytes) into INCR bursts of `beat`-byte beats,
/// aligned to the beat, at most 256 beats, never crossing a 4 KiB boundary.
inline void split_row(uint64_t addr, uint64_t bytes, uint32_t beat, std::vector<Burst>& out) {
  out.clear();
  if (bytes == 0) return;
  uint64_t a = addr / beat * beat;
  const uint64_t end = ceil_div(addr + bytes, beat) * beat;
  while (a < end) {
    const uint64_t page_end = (a / 4096 + 1) * 4096;
    const uint64_t lim = std::min({end, page_end, a + uint64_t(256) * beat});
    out.push_back({a, uint32_t((lim - a) / beat)});
    a = lim;
  }
}

}  // namespace loom::hw
