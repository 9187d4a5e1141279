// The compiler's cost model: predicted cycles, DRAM traffic, scratchpad
// occupancy and memory-port burstiness of a layer for a given tiling and
// core count. Every parameter comes from the hardware configuration
// (spec::HwConfig) through the same timing parameters and per-instruction
// formulas the tlm platform uses (host/hw/timing.h); the formulas are documented
// in docs/compiler.md ("Cost model").
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "loom/spec_gen.h"

namespace loom::compiler {

struct Layer;
struct Permute;
struct Budget;

/// Predicted numbers of one layer (or fused group) under one tiling.
struct Cost {
  uint64_t cycles = 0;       // predicted wall cycles of the layer, barrier included
  uint64_t core_cycles = 0;  // busiest core: its load/compute/store pipeline
  uint64_t port_cycles = 0;  // busiest memory port: beats of all its cores plus a latency
  uint64_t load_cycles = 0;  // busiest core: busy cycles per unit
  uint64_t compute_cycles = 0;
  uint64_t store_cycles = 0;
  uint64_t dram_read = 0;  // bytes, whole layer
  uint64_t dram_written = 0;
  uint64_t insns = 0;       // instructions, whole layer
  uint64_t core_insns = 0;  // instructions of the busiest core (what a refit's correction scales with)
  uint64_t bursts = 0;      // DMA bursts, whole layer
  uint64_t beats = 0;       // DMA beats, whole layer
  uint64_t sp_in = 0, sp_wgt = 0, sp_out = 0, sp_acc = 0, sp_param = 0;  // bytes per slot
  int tiles = 0;
  int cores_used = 0;

  /// Mean beats per burst: short bursts pay the memory latency more often.
  double beats_per_burst() const { return bursts ? double(beats) / double(bursts) : 0.0; }
  /// "cycles=... (core ..., port ...) dram=... insns=... bursts=... (x.y beats)".
  std::string summary() const;
};

/// The timing parameters of a configuration, and the correction a refit
/// from measured cycles adds to them (`loom tune`, docs/tuning.md). The
/// compiler takes them through CompileOptions::cost_params; without it the
/// uncorrected model of the configuration (CostParams::from) decides.
struct CostParams {
  uint64_t rows = 1, cols = 1;  // systolic array
  uint64_t mem_bytes = 8;       // bytes per memory beat
  uint64_t spw = 16;            // scratchpad port width
  uint64_t latency = 40;        // memory latency (cycles)
  uint64_t ports = 1;           // memory ports; core c uses port c % ports
  uint64_t share = 1;           // cores transferring through one port at the same time (estimate sets it)
  // Refitted correction, 0 in the uncorrected model: every layer's predicted
  // cycles get layer_cycles + insn_cycles x (instructions of its busiest
  // core), clamped at 0.
  double layer_cycles = 0;
  double insn_cycles = 0;
  static CostParams from(const spec::HwConfig& cfg);
  bool corrected() const { return layer_cycles != 0 || insn_cycles != 0; }
  /// The correction for a layer whose busiest core runs `core_insns` instructions.
  double correction(double core_insns) const { return layer_cycles + insn_cycles * core_insns; }
  auto operator<=>(const CostParams&) const = default;
};

/// A cost-params file (`loom compile --cost-params`, written by `loom tune
/// --cost-params-out`): a JSON object {"kind": "loom-cost-params",
/// "version": 1, "config": NAME, and optionally "latency" (cycles, integer),
/// "layer_cycles", "insn_cycles" (numbers), "fit" (provenance, not read)}.
/// Fields left out keep the configuration's value. Errors name the file and
/// the field.
Expected<CostParams> read_cost_params(const std::string& path, const spec::HwConfig& cfg);
/// The file's text for `p` compiled for `cfg`, with `fit_json` (a JSON
/// object text, or "") as "fit".
std::string cost_params_text(const CostParams& p, const spec::HwConfig& cfg, const std::string& fit_json = "");

/// Cycles of one LOAD (read) or STORE (write) of `rows` rows of `cols` bytes
/// `stride` bytes apart, uncontended; also counts its bursts and beats.
uint64_t dma_cycles(const CostParams& p, bool write, uint64_t rows, uint64_t cols, uint64_t stride,
                    uint64_t* bursts = nullptr, uint64_t* beats = nullptr);

/// Load cycles of gathering `count` elements through `pm` (lower.cc
/// gather_permuted: rows of one run, a LOAD per stretch along the row dim),
/// uncontended.
uint64_t gather_cycles(const CostParams& p, const Permute& pm, uint64_t count);

/// Cost of `l` with the tiling in l.tiling (tm, tn, ksteps) spread over
/// `cores` cores, with `slots` scratchpad slots (2: double buffering).
/// `residual_in` adds an m x n int8 residual tile per output tile to IN and
/// its LOAD (a residual add folded into POSTOP).
Cost estimate(const CostParams& p, const Layer& l, int cores, int slots, bool residual_in = false);

/// A lower bound of estimate(p, l, cores, slots, residual_in).cycles that
/// walks no DMA: the array and POSTOP cycles of every tile, spread evenly
/// over the cores the tiles use. The tile search skips a tiling whose bound
/// is above the best prediction so far. 0 (no bound) for a tiling other
/// than plain GEMM tiles (row windows, image bands, the depthwise unit), a
/// layer that is not a MAC layer, or a correction with insn_cycles < 0.
uint64_t cycles_floor(const CostParams& p, const Layer& l, int cores, bool residual_in = false);

/// The cost of the barrier that separates two layers (SEM_SIGNAL + SEM_WAIT
/// on every core).
uint64_t barrier_cycles();

}  // namespace loom::compiler
