// A cycle-level AXI4 slave memory model for one fabric memory port: latency,
// bandwidth, random stalls, several outstanding bursts, and error responses
// taken from hw::DeviceMemory (unallocated memory, injected faults).
#pragma once

#include <cstdint>
#include <deque>
#include <random>

#include "hw/axi_types.h"
#include "hw/memory.h"

namespace loom::hw {

struct AxiMemoryOptions {
  uint32_t read_latency = 0;     // cycles from an AR handshake until its first R beat may be offered
  uint32_t write_latency = 0;    // cycles from the last W beat until its B response may be offered
  double beats_per_cycle = 1.0;  // data beats per cycle, each of R and W (0 < x <= 1)
  double stall_prob = 0.0;       // chance that a ready or a new valid is withheld in a cycle
  uint32_t max_reads = 8;        // read bursts accepted but not yet fully answered
  uint32_t max_writes = 8;       // write bursts accepted but not yet answered on B
  bool reorder_ids = false;      // bursts of different IDs may be answered out of order
  uint64_t seed = 1;
};

struct AxiMemoryStats {
  uint64_t read_bursts = 0, write_bursts = 0;
  uint64_t read_beats = 0, write_beats = 0;
  uint64_t slverr = 0, decerr = 0;  // error beats (R) and responses (B)
};

class AxiMemoryModel {
 public:
  /// `beat_bytes` is the data bus width in bytes (MemBytes), a power of two <= kMaxBeatBytes.
  AxiMemoryModel(hw::MemoryPort& mem, unsigned beat_bytes, const AxiMemoryOptions& opt = {});

  /// Sets the slave-driven fields of `p` (ready of AW/W/AR, R and B channels)
  /// for the coming rising edge. Call once per cycle, before sampling.
  void drive(hw::AxiPins& p);
  /// Takes the handshakes in `p` (values sampled just before the rising edge)
  /// and advances one cycle.
  void edge(const hw::AxiPins& p);

  /// No burst accepted and unanswered.
  bool idle() const { return reads_.empty() && writes_.empty() && bresps_.empty(); }
  const AxiMemoryStats& stats() const { return stats_; }
  const AxiMemoryOptions& options() const { return opt_; }
  uint64_t cycle() const { return now_; }

 private:
  struct ReadBurst {
    uint8_t id = 0;
    uint64_t addr = 0;
    uint32_t beats = 0;
    uint32_t done = 0;
    uint64_t ready_at = 0;
  };
  struct WriteBurst {
    uint8_t id = 0;
    uint64_t addr = 0;
    uint32_t beats = 0;
    uint32_t done = 0;
    uint8_t resp = hw::kRespOkay;
  };
  struct BResp {
    uint8_t id = 0;
    uint8_t resp = hw::kRespOkay;
    uint64_t ready_at = 0;
  };

  bool chance(double p) { return p > 0.0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p; }
  uint64_t beat_addr(uint64_t start, uint32_t beat) const;
  uint8_t resp_of(hw::AxiResp r);
  /// Index of the read burst to answer next, or -1 when none is due.
  int pick_read();
  int pick_bresp();

  hw::MemoryPort& mem_;
  unsigned beat_bytes_;
  AxiMemoryOptions opt_;
  std::mt19937_64 rng_;
  uint64_t now_ = 0;
  double r_credit_ = 1.0, w_credit_ = 1.0;

  std::deque<ReadBurst> reads_;
  std::deque<WriteBurst> writes_;  // AW accepted; W beats fill the oldest incomplete one
  std::deque<BResp> bresps_;
  // A beat or response once offered stays on the wires until taken (AXI
  // requires valid and payload to hold), so the choice is remembered.
  int r_cur_ = -1;  // burst being answered (no beat interleaving across IDs)
  bool r_offered_ = false;
  uint8_t r_resp_ = hw::kRespOkay;
  std::array<uint8_t, hw::kMaxBeatBytes> r_data_{};
  int b_cur_ = -1;
  AxiMemoryStats stats_;
};

}  // namespace loom::hw
