// Functional state of one tlm device (device memory, golden fabric, command
// rings, interrupt status, timed semaphore signals), shared by the register
// map and the platform's timed threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <systemc>

#include "backends/ref/golden.h"
#include "backends/ref/memory.h"
#include "loom/spec_gen.h"

namespace loom::tlm {

/// Command-ring registers and state of one core, with RefDevice's meaning.
struct RingCtl {
  uint64_t base = 0;
  uint32_t size = 0;
  uint32_t head = 0;  // next instruction to issue (the faulting one after an error)
  uint32_t tail = 0;
  bool running = false;  // busy: from a doorbell until END, an error or an empty ring
  bool done = false;
  bool blocked = false;  // waiting on a semaphore
};

struct DeviceState {
  explicit DeviceState(const spec::HwConfig& c) : cfg(c), fabric(cfg, mem), sem_times(cfg.semaphores) {}
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  spec::HwConfig cfg;
  ref::DeviceMemory mem;
  ref::Fabric fabric;  // architectural state; instructions execute here when they issue
  std::array<RingCtl, spec::kMaxCores> rings{};
  uint32_t irq_status = 0;
  /// Simulated times of the SEM_SIGNALs each semaphore has counted since its
  /// last clear, so a SEM_WAIT knows when its count was reached.
  std::vector<std::vector<sc_core::sc_time>> sem_times;
};

}  // namespace loom::tlm
