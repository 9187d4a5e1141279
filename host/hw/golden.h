// The golden functional model of the loom fabric: executes encoded
// instructions bit-exactly per docs/spec/isa.yaml, one instruction at a time
// in program order, with no notion of time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/memory.h"
#include "loom/spec_gen.h"

namespace loom::hw {

/// Dependency-token queues between neighbouring units (load <-> compute <->
/// store), named by direction.
enum class TokenQueue : uint8_t { LoadToCompute, ComputeToLoad, ComputeToStore, StoreToCompute };
inline constexpr unsigned kNumTokenQueues = 4;

/// Scratchpad addresses and strides of 32-bit words (ACC, PARAM) are
/// multiples of 4 bytes; an instruction that breaks this is illegal.
inline bool is_word_aligned(uint64_t v) { return (v & 3) == 0; }

/// Architectural state of one core that instructions read and write.
struct CoreState {
  std::array<std::vector<uint8_t>, spec::kNumBuffers> sp;  // scratchpads by spec::Buffer id
  std::array<uint64_t, kNumTokenQueues> tokens{};
  std::array<uint64_t, spec::kNumCounters> counters{};
  uint64_t win_base = 0;  // DMA window [win_base, win_limit); limit 0 denies all
  uint64_t win_limit = 0;
  uint32_t err_cause = 0;  // sticky spec::err bits
  uint32_t err_pc = 0;     // ring index of the first error

  std::vector<uint8_t>& buf(spec::Buffer b) { return sp[unsigned(b)]; }
  const std::vector<uint8_t>& buf(spec::Buffer b) const { return sp[unsigned(b)]; }
  uint64_t& counter(spec::Counter c) { return counters[unsigned(c)]; }
};

/// What one execute() call did.
enum class Outcome : uint8_t {
  Retired,     // the instruction completed
  RetiredEnd,  // END completed: the stream is done
  Blocked,     // SEM_WAIT not yet satisfied; nothing changed, retry later
  Faulted,     // an error was raised; nothing but the error state changed
};

class Fabric {
 public:
  /// The config must be valid (see validate_config); `mem` must outlive this.
  Fabric(const spec::HwConfig& cfg, MemoryPort& mem);

  unsigned num_cores() const { return unsigned(cores_.size()); }
  unsigned num_semaphores() const { return unsigned(sems_.size()); }
  CoreState& core(unsigned c) { return cores_.at(c); }
  const CoreState& core(unsigned c) const { return cores_.at(c); }

  uint32_t semaphore(unsigned i) const { return i < sems_.size() ? sems_[i] : 0; }
  void clear_semaphore(unsigned i) {
    if (i < sems_.size()) sems_[i] = 0;
  }
  /// Verification backdoor: sets semaphore `i` to `v` without a signal, as
  /// RtlDevice::preload_semaphore does on the RTL (a counter that grows by
  /// one per SEM_SIGNAL needs 2^32 of them to reach its top bits). False
  /// for a semaphore the configuration lacks, as on the RTL.
  bool preload_semaphore(unsigned i, uint32_t v) {
    if (i >= sems_.size()) return false;
    sems_[i] = v;
    return true;
  }

  /// Executes one instruction on core `c`. `pc` is the instruction's ring
  /// index, recorded in ERR_PC when it faults. A faulting instruction changes
  /// nothing but the core's error state (it does not retire).
  Outcome execute(unsigned c, const spec::Insn& insn, uint32_t pc);

  /// Records an error on core c; only the first error sets ERR_PC.
  void raise(unsigned c, uint32_t cause, uint32_t pc);

  /// Soft reset of one core: tokens, error state and counters clear. The
  /// window registers and scratchpad contents (BRAM) are kept.
  void reset_core(unsigned c);

 private:
  uint32_t exec_load(CoreState& s, const spec::Insn& insn);
  uint32_t exec_store(CoreState& s, const spec::Insn& insn);
  uint32_t exec_sync(spec::Opcode op, const spec::Insn& insn, bool* blocked);

  std::vector<CoreState> cores_;
  std::vector<uint32_t> sems_;
  MemoryPort& mem_;
};

/// Error text when a config cannot be modelled (core or semaphore count out
/// of the register map's range, empty scratchpads, bad ring depth); empty when fine.
std::string validate_config(const spec::HwConfig& cfg);

// Compute-unit instructions (golden_compute.cc). Each returns 0 on success or
// the spec::err bit to raise; on a non-zero return nothing has changed.
uint32_t exec_gemm(CoreState& s, const spec::GemmInsn& g);
uint32_t exec_postop(CoreState& s, const spec::PostopInsn& p);
uint32_t exec_pool(CoreState& s, const spec::PoolInsn& p);
uint32_t exec_eltwise(CoreState& s, const spec::EltwiseInsn& e);
uint32_t exec_rownorm(CoreState& s, const spec::RownormInsn& r);
uint32_t exec_dwconv(CoreState& s, const spec::DwconvInsn& d);

/// Bytes spanned by `rows` rows of `cols` bytes `stride` apart (0 when empty).
constexpr uint64_t span_2d(uint64_t rows, uint64_t stride, uint64_t cols) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * stride + cols;
}

/// True when [addr, addr + len) lies inside a scratchpad of `size` bytes.
constexpr bool in_scratchpad(uint64_t size, uint64_t addr, uint64_t len) {
  return len == 0 || (addr <= size && len <= size - addr);
}

}  // namespace loom::hw
