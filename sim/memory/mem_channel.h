// The memory side of the tlm and cosim platforms: one TLM-2.0 target for all
// memory ports that annotates each burst with latency and with the time it
// waits for its port's read or write data channel, so cores on one port
// contend; plus the fault plan (SLVERR/DECERR, added latency) both share.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "common/status.h"
#include "hw/memory.h"
#include "loom/spec_gen.h"
#include "device/device.h"

namespace loom::tlm {

/// Faults the memory model injects, from the device options (see
/// FaultPlan::from_options) or set by a test:
///   ranges        every fabric access overlapping [addr, addr + len) answers
///                 with the kind (hw::DeviceMemory::inject_fault)
///   nth_burst     the n-th burst (1-based, all ports, in arrival order)
///                 answers with nth_kind on every beat (0: off)
///   stall_cycles  added latency of a burst, with probability stall_prob
struct FaultPlan {
  struct Range {
    uint64_t addr = 0, len = 0;
    hw::FaultKind kind = hw::FaultKind::SlvErr;
  };
  std::vector<Range> ranges;
  uint64_t nth_burst = 0;
  hw::FaultKind nth_kind = hw::FaultKind::SlvErr;
  uint32_t stall_cycles = 0;
  double stall_prob = 1.0;
  uint64_t seed = 1;

  bool any() const { return !ranges.empty() || nth_burst != 0 || stall_cycles != 0; }
  /// Puts the address ranges into `mem` (the access path of both backends).
  void apply(hw::DeviceMemory& mem) const {
    for (const Range& r : ranges) mem.inject_fault(r.addr, r.len, r.kind);
  }

  /// From the device options' mem_faults, mem_stall and seed (their syntax
  /// is in device/device.h). A malformed value is one error line naming the
  /// option (its label: the flag or variable it came from) and the text.
  static Expected<FaultPlan> from_options(const runtime::DeviceOptions& o);
};

/// Attached to a burst by an initiator that moves data through the target
/// (the cosim AXI bridges): the target then reads or writes the backing
/// memory beat by beat, as the rtl backend's AXI memory model does, and
/// answers per beat. Without it a payload carries timing only (tlm).
///
/// For such bursts the returned delay is the time the first R beat (reads) or
/// the B response (writes) may be offered, and a write's delay passed in is
/// the time of its first W beat (the beats already crossed the wires; the
/// write channel is reserved from there).
struct AxiBurstExt : ::tlm::tlm_extension<AxiBurstExt> {
  unsigned beat_bytes = 8;
  /// Write bursts: per beat, the byte strobes (bit i: byte i of the beat).
  std::vector<uint64_t> strb;
  /// Per beat: AXI response code (0 OKAY, 2 SLVERR, 3 DECERR); reads.
  std::vector<uint8_t> resp;
  /// Write bursts: the burst's B response (the first failing beat's).
  uint8_t bresp = 0;

  ::tlm::tlm_extension_base* clone() const override { return new AxiBurstExt(*this); }
  void copy_from(const ::tlm::tlm_extension_base& e) override { *this = static_cast<const AxiBurstExt&>(e); }
};

/// Burst-level arbitration per memory port. Core i reaches port i % ports.
/// Each port has a read data channel and a write data channel, each moving
/// one beat per cycle; a burst reserves its channel from the later of its
/// request time (plus latency for reads) and the end of the previous
/// reservation. Requests are served in the order they reach the target, which
/// within one quantum may differ from simulated-time order (documented
/// loosely-timed approximation of the RTL's round robin per burst).
///
/// Payloads of the tlm cores carry timing only: data moves in the golden
/// model when the instruction issues, so the target never touches their data
/// pointer. Bursts with an AxiBurstExt move data in the backing memory.
class MemChannel : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemChannel> socket;

  explicit MemChannel(sc_core::sc_module_name name);

  /// New device: ports, beat width, latency and clock period; clears
  /// reservations, burst counts and the fault plan.
  void configure(unsigned ports, unsigned beat_bytes, unsigned latency_cycles, sc_core::sc_time period);
  /// Burst faults and stalls of `plan` (its ranges belong in the memory: FaultPlan::apply).
  void set_faults(const FaultPlan& plan);
  /// Memory that bursts with an AxiBurstExt read and write (nullptr: none).
  void set_backing(hw::DeviceMemory* mem) { backing_ = mem; }

  /// Beats moved and cycles bursts waited for a busy channel, per port.
  uint64_t beats(unsigned port) const { return port < ports_.size() ? ports_[port].beats : 0; }
  uint64_t wait_cycles(unsigned port) const { return port < ports_.size() ? ports_[port].waited : 0; }
  /// Bursts served since configure(), bursts given added latency, bursts
  /// answered with an injected error.
  uint64_t bursts() const { return bursts_; }
  uint64_t stalled() const { return stalled_; }
  uint64_t injected() const { return injected_; }

 private:
  void b_transport(int id, ::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  /// Reads or writes the backing memory for a data-carrying burst.
  void move_data(::tlm::tlm_generic_payload& gp, AxiBurstExt& ext, uint8_t forced);

  struct Port {
    sc_core::sc_time rd_free = sc_core::SC_ZERO_TIME;
    sc_core::sc_time wr_free = sc_core::SC_ZERO_TIME;
    uint64_t beats = 0;
    uint64_t waited = 0;
  };
  std::array<Port, spec::kMaxCores> ports_{};
  unsigned nports_ = 1;
  unsigned beat_bytes_ = 8;
  sc_core::sc_time latency_;
  sc_core::sc_time period_;
  hw::DeviceMemory* backing_ = nullptr;
  FaultPlan plan_;
  std::mt19937_64 rng_{1};
  uint64_t bursts_ = 0, stalled_ = 0, injected_ = 0;
};

}  // namespace loom::tlm
