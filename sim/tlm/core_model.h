// Timing model of one fabric core: SC_THREADs for the fetcher, the in-order
// dispatcher and the load, compute and store units, synchronised by
// time-stamped dependency tokens; each thread is loosely timed with its own
// quantum keeper and reaches memory through a TLM-2.0 initiator socket.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>

#include "hw/timing.h"
#include "device/trace.h"
#include "tlm/device_state.h"

namespace loom::tlm {

class CoreModel : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<CoreModel> socket;

  SC_HAS_PROCESS(CoreModel);
  /// `sem_signal` runs when this core's SEM_SIGNAL counts; it should poke()
  /// every core, in index order.
  CoreModel(sc_core::sc_module_name name, unsigned index, std::function<void()> sem_signal);

  /// Binds the core to a device (nullptr: detached) and resets its timing state.
  void attach(DeviceState* st, const hw::TimingParams& tp, sc_core::sc_time period);
  /// Called by the register map after a doorbell set RING running.
  void start(bool was_running);
  /// Abandons everything in flight (soft reset, new device).
  void reset();
  /// Wakes the threads after a register write that may unblock them.
  void poke();
  /// Records unit intervals to `sink` (nullptr: off), in cycles since `base`.
  void set_trace(runtime::TraceSink* sink, sc_core::sc_time base) {
    trace_ = sink;
    trace_base_ = base;
  }

 private:
  /// Thrown inside a thread when its core was reset under it.
  struct Abandon {};
  struct Fetched {
    spec::Insn insn;
    uint32_t pc = 0;
    uint32_t fault = 0;  // spec::err bits of a failed fetch
    sc_core::sc_time ready;
  };
  struct Job {
    spec::Insn insn;
    spec::Opcode op = spec::Opcode::NOP;
    sc_core::sc_time issue;
  };
  static constexpr unsigned kUnits = 3;      // load, compute, store
  static constexpr unsigned kFifoDepth = 4;  // fetched-instruction FIFO of loom_fetch

  void fetch_thread();
  void dispatch_thread();
  void load_thread() { unit_thread(spec::Unit::Load); }
  void compute_thread() { unit_thread(spec::Unit::Compute); }
  void store_thread() { unit_thread(spec::Unit::Store); }
  void unit_thread(spec::Unit u);

  void fetch_once(tlm_utils::tlm_quantumkeeper& qk, uint64_t gen);
  void dispatch_once(tlm_utils::tlm_quantumkeeper& qk, uint64_t gen);
  void run_job(spec::Unit u, const Job& j, tlm_utils::tlm_quantumkeeper& qk, uint64_t gen);
  /// DMA of `rows` rows of `cols` bytes, one burst outstanding at a time.
  void dma_rows(bool write, uint64_t addr, uint64_t rows, uint64_t stride, uint64_t cols,
                tlm_utils::tlm_quantumkeeper& qk, uint64_t gen);
  void stop_running(sc_core::sc_time at);
  void halt(uint32_t cause, uint32_t pc, sc_core::sc_time at);

  // Time helpers (throw Abandon when the core was reset during a wait).
  /// Catches up with simulated time, or sleeps until something of this core
  /// (or a semaphore) changes; callers loop on their condition around it.
  /// `role` is the calling thread's index into wake_.
  void wait_change(tlm_utils::tlm_quantumkeeper& qk, uint64_t gen, unsigned role);
  void sync(tlm_utils::tlm_quantumkeeper& qk, uint64_t gen);
  void at_least(tlm_utils::tlm_quantumkeeper& qk, sc_core::sc_time t);
  void spend(tlm_utils::tlm_quantumkeeper& qk, uint64_t gen, uint64_t cycles);
  uint64_t to_cycles(sc_core::sc_time t) const { return uint64_t(t / period_); }
  /// Reports [from, to) on `track` when tracing is on.
  void record_span(runtime::TraceTrack track, spec::Opcode op, sc_core::sc_time from, sc_core::sc_time to,
             std::string_view name = {});
  bool units_idle() const { return !job_[0] && !job_[1] && !job_[2]; }
  sc_core::sc_time units_free_at() const;
  uint64_t& counter(spec::Counter c) { return st_->fabric.core(index_).counter(c); }
  /// Adds a wait [from, to) to counter `c`, counting cycles in which several
  /// units wait once (`counted`: end of what the counter holds so far).
  void count_once(spec::Counter c, sc_core::sc_time& counted, sc_core::sc_time from, sc_core::sc_time to);
  /// A unit's or the dispatcher's dependency wait (CYCLES_STALL_DEP).
  void stall_dep(sc_core::sc_time from, sc_core::sc_time to) {
    count_once(spec::Counter::CYCLES_STALL_DEP, dep_counted_, from, to);
  }
  /// A DMA's wait on memory (CYCLES_STALL_MEM).
  void stall_mem(sc_core::sc_time from, sc_core::sc_time to) {
    count_once(spec::Counter::CYCLES_STALL_MEM, mem_counted_, from, to);
  }

  unsigned index_;
  std::function<void()> sem_signal_;
  /// One wake-up event per thread (fetch, dispatch, load, compute, store),
  /// always notified in that order: with one shared event the wake order would
  /// follow the order of earlier waits, and cycle counts would depend on
  /// history; this way a run is deterministic.
  std::array<sc_core::sc_event, 5> wake_;
  DeviceState* st_ = nullptr;
  hw::TimingParams tp_;
  sc_core::sc_time period_{1, sc_core::SC_NS};
  uint64_t gen_ = 0;

  std::deque<Fetched> fifo_;
  uint32_t fetch_ptr_ = 0;
  sc_core::sc_time last_pop_;
  std::array<std::optional<Job>, kUnits> job_;
  std::array<bool, kUnits> active_{};
  std::array<sc_core::sc_time, kUnits> free_at_{};
  std::array<std::deque<sc_core::sc_time>, hw::kNumTokenQueues> tokens_;
  sc_core::sc_time busy_since_;
  sc_core::sc_time dep_counted_;  // end of the dependency stalls counted so far
  sc_core::sc_time mem_counted_;  // end of the memory stalls counted so far
  std::vector<uint8_t> scratch_;  // data pointer of timing-only payloads
  runtime::TraceSink* trace_ = nullptr;
  sc_core::sc_time trace_base_;
};

}  // namespace loom::tlm
