// The cosim platform: the Verilated loom_fabric (through hw::FabricSim)
// embedded in SystemC. A clock SC_THREAD steps the model cycle by cycle under
// a quantum keeper; AxiTlmBridge turns each memory port's AXI4 bursts into
// TLM-2.0 payloads for the shared MemChannel (the tlm platform's memory-port
// timing, here also moving the data); the host's register payloads reach
// s_axi_control through an AXI4-Lite master on the pins. AxiChecker watches
// every memory port. Built once per process (SystemC elaborates once) and
// attached to one device at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "common/status.h"
#include "cosim/axi_tlm_bridge.h"
#include "hw/memory.h"
#include "hw/verilated/axi_checker.h"
#include "hw/verilated/axi_lite_master.h"
#include "hw/verilated/fabric_sim.h"
#include "loom/spec_gen.h"
#include "memory/mem_channel.h"

namespace loom::cosim {

class CosimPlatform : public sc_core::sc_module {
 public:
  /// Register payloads from the host (initiator) to the AXI4-Lite pins (target).
  tlm_utils::simple_initiator_socket<CosimPlatform> host;
  tlm_utils::simple_target_socket<CosimPlatform> regs;

  SC_HAS_PROCESS(CosimPlatform);
  /// The process-wide platform, elaborated on first use and never destroyed;
  /// an error when SystemC was already elaborated by another platform (tlm).
  static Expected<CosimPlatform*> instance();

  /// Binds a model, the device memory its ports reach and the memory timing
  /// of `cfg`, then resets the fabric for `reset_cycles` cycles.
  void attach(std::unique_ptr<hw::FabricSim> sim, hw::DeviceMemory& mem, const spec::HwConfig& cfg,
              const tlm::FaultPlan& plan, uint32_t reset_cycles);
  /// Finishes the model (closes its trace) and drops it.
  void detach();
  bool attached() const { return sim_ != nullptr; }

  /// One AXI4-Lite access each, as a TLM payload through `host`. A register
  /// access that never completes is recorded in health(); reads return ~0.
  uint32_t read_reg(uint32_t offset);
  void write_reg(uint32_t offset, uint32_t value);
  /// Lets the clock thread run `n` cycles.
  void run_cycles(uint64_t n);

  uint64_t cycles() const { return cycles_; }
  bool interrupt() const { return sim_->interrupt(); }
  /// No burst accepted and unanswered on any port.
  bool memory_idle() const;
  /// Ok, or the first problem: hung register access, RTL assertion, AXI protocol violation.
  Status health() const;
  unsigned mem_ports() const { return nports_; }
  const hw::AxiChecker& checker(unsigned p) const { return checkers_.at(p); }
  const AxiTlmBridge& bridge(unsigned p) const { return *bridges_.at(p); }
  tlm::MemChannel& memory() { return mem_; }
  void set_lite_timeout(uint32_t cycles) { lite_timeout_ = cycles; }

 private:
  explicit CosimPlatform(sc_core::sc_module_name name);

  void clock_thread();
  /// Stops the clock thread (cycle target reached, register access done).
  bool should_pause() const;
  /// One clock cycle: sample, rising edge, falling edge, drive. `local` is the
  /// clock thread's offset from sc_time_stamp().
  void tick(sc_core::sc_time local);
  void drive_inputs();
  void drive_lite();
  void reg_transport(::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  uint32_t lite_access(bool write, uint32_t offset, uint32_t value, bool& ok);

  tlm::MemChannel mem_;
  std::array<std::unique_ptr<AxiTlmBridge>, spec::kMaxCores> bridges_;
  std::vector<hw::AxiChecker> checkers_;
  std::vector<hw::AxiPins> pins_;
  unsigned nports_ = 0;
  hw::AxiLiteMaster lite_;
  hw::LitePins lite_pins_;
  std::unique_ptr<hw::FabricSim> sim_;
  sc_core::sc_time period_{1, sc_core::SC_NS};
  bool in_reset_ = true;
  bool lite_wait_ = false;
  uint64_t cycles_ = 0;
  uint64_t stop_at_ = 0;
  uint32_t lite_timeout_ = 10'000;
  std::string lite_failure_;
};

}  // namespace loom::cosim
