// Functional state of one tlm device (device memory, golden fabric, command
// rings, interrupt status, timed semaphore signals), shared by the register
// map and the platform's timed threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/control_regs.h"
#include "hw/golden.h"
#include "hw/memory.h"
#include "loom/spec_gen.h"

namespace loom::tlm {

struct DeviceState {
  explicit DeviceState(const spec::HwConfig& c) : cfg(c), fabric(cfg, mem), regs(cfg, fabric), sem_times(cfg.semaphores) {}
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  spec::HwConfig cfg;
  hw::DeviceMemory mem;
  hw::Fabric fabric;  // architectural state; instructions execute here when they issue
  hw::ControlRegs regs;  // the register map, shared with the ref backend
  std::array<hw::RingCtl, spec::kMaxCores>& rings = regs.rings;
  uint32_t& irq_status = regs.irq_status;
  /// Simulated times of the SEM_SIGNALs each semaphore has counted since its
  /// last clear, so a SEM_WAIT knows when its count was reached.
  std::vector<std::vector<sc_core::sc_time>> sem_times;
  /// Latest simulated time at which a core went idle (its local time, which
  /// may run ahead of the kernel's under temporal decoupling).
  sc_core::sc_time last_core_stop = sc_core::SC_ZERO_TIME;
  /// Set while the host waits for an interrupt (Device::run_for): raising an
  /// enabled IRQ_STATUS bit then pauses the kernel (sc_pause).
  bool pause_on_irq = false;
  void raise_irq(uint32_t bits) {
    irq_status |= bits;
    if (pause_on_irq && regs.irq_line()) sc_core::sc_pause();
  }
};

}  // namespace loom::tlm
