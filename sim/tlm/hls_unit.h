// An HLS kernel as a compute unit of the tlm platform (hls/README.md "As
// compute units"): a call runs the kernel's C function on the device memory
// when it starts (data moves at issue, as the cores' instructions do in the
// golden model) and takes the kernel's latency model in device cycles, while
// its reads and writes cross the memory channel as timing-only bursts on the
// unit's port, so its traffic contends with the cores'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/timing.h"
#include "loom_hls_units.h"
#include "device/device.h"
#include "tlm/device_state.h"

namespace loom::tlm {

/// Units per kernel kind the platform elaborates (configs use up to this many).
inline constexpr unsigned kMaxHlsUnitsPerKind = 2;

class HlsUnit : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<HlsUnit> socket;

  SC_HAS_PROCESS(HlsUnit);
  HlsUnit(sc_core::sc_module_name name, std::string kind, unsigned index);

  /// Binds the unit to a device (nullptr: detached) and abandons any call.
  void attach(DeviceState* st, const hw::TimingParams& tp, sc_core::sc_time period);
  /// Runs `call` functionally now and starts its timing at the current
  /// simulated time; `id` names it for done(). Fails (nothing written) on a
  /// bad call or when the unit is busy.
  Status start(const runtime::UnitCall& call, uint64_t id);
  bool busy() const { return busy_; }
  /// Whether call `id` has finished.
  bool done(uint64_t id) const { return !busy_ || id_ != id; }
  /// Simulated start and end of the last finished call.
  sc_core::sc_time last_start() const { return last_start_; }
  sc_core::sc_time last_end() const { return last_end_; }
  const std::string& kernel_kind() const { return kind_; }
  unsigned index() const { return index_; }

 private:
  void thread();
  /// One timing-only burst through the socket at or after `at`; returns when
  /// its last beat (read) or response (write) arrives.
  sc_core::sc_time burst(bool write, uint64_t addr, uint32_t bytes, sc_core::sc_time at);

  std::string kind_;
  unsigned index_;
  DeviceState* st_ = nullptr;
  hw::TimingParams tp_;
  sc_core::sc_time period_{1, sc_core::SC_NS};
  uint64_t gen_ = 0;
  sc_core::sc_event start_ev_;
  bool busy_ = false;
  uint64_t id_ = 0;
  uint64_t latency_ = 0;           // model cycles of the call in flight
  std::vector<hls::Span> spans_;   // its reads and writes
  sc_core::sc_time start_time_, last_start_, last_end_;
  std::vector<uint8_t> scratch_;   // data pointer of timing-only payloads
  std::vector<hw::Burst> bursts_;      // the thread's row splits (a member: the
                                   // thread never returns, its locals leak)
};

}  // namespace loom::tlm
