// Runs a plan on any Device through the spec's register map, exactly as a
// host driver would on a board: memory, windows, rings, doorbells, counters.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "device/device.h"
#include "plan/plan.h"

namespace loom::runtime {

struct RunOptions {
  uint64_t timeout_cycles = 4'000'000'000ull;  // per run_until_idle call on timed backends
  /// Measure every layer's cycles (RunResult::layer_cycles) on a timed
  /// backend: the streams are released one layer at a time, cut after the
  /// barrier between layers. Static plans without HLS unit calls only (in
  /// pipeline and dynamic plans layers overlap, so they have no cycles of
  /// their own); others run whole and report none.
  bool layer_cycles = false;
  /// Called after every stretch of device time with the instructions the
  /// cores have retired so far and the run's total (for a progress bar);
  /// dynamic plans report their task pool's progress at the end only.
  std::function<void(uint64_t done, uint64_t total)> progress;
  /// run_program only: compare every segment's outputs, bit for bit, with
  /// loom's direct reference (ir::run_reference of the segment's graph) on
  /// the same device inputs (ProgramRun::mismatches). The segments then need
  /// their graphs.
  bool check = false;
};

struct CoreReport {
  std::array<uint64_t, spec::kNumCounters> counters{};
  uint64_t instructions = 0;  // instructions in this core's stream
  bool done = false;
};

struct RunResult {
  std::vector<std::pair<std::string, Tensor>> outputs;  // graph output order
  std::vector<CoreReport> cores;
  bool has_time = false;
  uint64_t cycles = 0;             // device cycles for the whole run (timed backends)
  uint64_t ring_refills = 0;       // doorbells rung after the first one per core
  uint64_t tasks = 0, quanta = 0;  // dynamic plans: tasks dispatched, device quanta run
  /// With RunOptions::layer_cycles: the cycles of each plan layer (plan
  /// order, summing to `cycles`); empty when not measured.
  std::vector<uint64_t> layer_cycles;
  std::vector<uint64_t> layer_start;  // Device::cycles() at each layer's start
};

/// Loads `p` on `dev`, runs it with `inputs` (by graph input name) and reads
/// back the outputs. Device errors name the core, the cause and the
/// instruction index in the core's stream.
Expected<RunResult> execute(Device& dev, const plan::Plan& p, const std::map<std::string, Tensor>& inputs,
                            const RunOptions& opt = {});

/// Adds `base` to the device-memory address of every LOAD/STORE.
std::vector<spec::Insn> relocate(const std::vector<spec::Insn>& stream, uint64_t base);
/// Adds `shift` to the semaphore id of every SEM_SIGNAL/SEM_WAIT (streams
/// side by side on one fabric, each with its own semaphores).
std::vector<spec::Insn> renumber_semaphores(std::vector<spec::Insn> stream, uint64_t shift);
/// Replaces the semaphore id s of every SEM_SIGNAL/SEM_WAIT with map(s).
std::vector<spec::Insn> renumber_semaphores(std::vector<spec::Insn> stream,
                                            const std::function<uint64_t(uint64_t)>& map);
/// The highest semaphore id a stream names (0 when it names none).
uint64_t max_semaphore(const std::vector<spec::Insn>& stream);

/// Ring entries for a stream of `n` instructions: the smallest power of two
/// (at least 2) that holds the whole stream plus one free slot, at most
/// `depth`.
uint32_t ring_entries_for(uint64_t n, uint32_t depth);
/// Writes a 64-bit value to a LO/HI register pair.
void write_reg64(Device& dev, uint32_t lo_addr, uint32_t hi_addr, uint64_t v);
/// "device error CAUSES at instruction N (OP)" for a core that stopped with
/// ERR_CAUSE `cause` and ERR_PC `pc` (a ring slot), after `written` stream
/// instructions went into a ring of `ring_size` entries: the failing
/// instruction is the in-flight one whose slot is pc.
std::string describe_device_error(uint32_t cause, uint32_t pc, uint64_t written, uint32_t ring_size,
                                  const std::vector<spec::Insn>& stream);

}  // namespace loom::runtime
