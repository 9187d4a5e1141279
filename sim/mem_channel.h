// The memory side of the tlm platform: one TLM-2.0 target for all memory
// ports that annotates each burst with latency and with the time it waits for
// its port's read or write data channel, so cores on one port contend.
#pragma once

#include <array>
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "loom/spec_gen.h"

namespace loom::tlm {

/// Burst-level arbitration per memory port. Core i reaches port i % ports.
/// Each port has a read data channel and a write data channel, each moving
/// one beat per cycle; a burst reserves its channel from the later of its
/// request time (plus latency for reads) and the end of the previous
/// reservation. Requests are served in the order they reach the target, which
/// within one quantum may differ from simulated-time order (documented
/// loosely-timed approximation of the RTL's round robin per burst).
///
/// Payloads carry timing only: data moves in the golden model when the
/// instruction issues, so the target never touches the data pointer.
class MemChannel : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemChannel> socket;

  explicit MemChannel(sc_core::sc_module_name name);

  /// New device: ports, beat width, latency and clock period; clears reservations.
  void configure(unsigned ports, unsigned beat_bytes, unsigned latency_cycles, sc_core::sc_time period);

  /// Beats moved and cycles bursts waited for a busy channel, per port.
  uint64_t beats(unsigned port) const { return port < ports_.size() ? ports_[port].beats : 0; }
  uint64_t wait_cycles(unsigned port) const { return port < ports_.size() ? ports_[port].waited : 0; }

 private:
  void b_transport(int id, ::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

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
};

}  // namespace loom::tlm
