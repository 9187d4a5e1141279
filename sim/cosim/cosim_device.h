// The `cosim` backend's public entry point: the Verilated loom_fabric inside
// the SystemC platform (pin-level AXI4 / AXI4-Lite <-> TLM-2.0 bridges, the
// memory-channel timing of the tlm platform) behind runtime::Device.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"
#include "memory/mem_channel.h"
#include "device/device.h"

namespace loom::cosim {

struct CosimOptions {
  /// Burst faults and stalls in the memory channel, address-range faults in
  /// device memory (tlm::FaultPlan; the registry's factory takes them from
  /// the device options mem_faults, mem_stall and seed).
  tlm::FaultPlan faults;
  /// FST trace file of the fabric; empty: none.
  std::string trace_path;
  uint32_t poll_interval = 64;
  uint32_t lite_timeout = 10'000;
  uint32_t reset_cycles = 8;
};

/// Configurations whose verilated model this build has (as the rtl backend).
std::vector<std::string_view> cosim_configs();

/// The backend registry's factory (device options wave, mem_faults,
/// mem_stall, seed). Fails with one line for a configuration that was not
/// verilated, a malformed option, or a second live cosim device (SystemC
/// elaborates one platform per process).
Expected<std::unique_ptr<runtime::Device>> make_cosim_device(const spec::HwConfig& cfg,
                                                             const runtime::DeviceOptions& opt = {});
Expected<std::unique_ptr<runtime::Device>> make_cosim_device(const spec::HwConfig& cfg, const CosimOptions& opt);

/// Test hooks on a cosim device (nullptr for other devices).
class CosimDevice;
CosimDevice* as_cosim(runtime::Device& d);
/// Fabric accesses overlapping [addr, addr + len) answer with `kind`.
void inject_fault(CosimDevice& d, uint64_t addr, uint64_t len, hw::FaultKind kind);
void clear_faults(CosimDevice& d);
bool irq_line(CosimDevice& d);
/// Clocks the fabric `n` cycles.
void step(CosimDevice& d, uint64_t n);
/// Protocol checkers, RTL assertions, register accesses.
Status health(CosimDevice& d);
/// Bursts the memory channel served, and those answered with an injected error.
uint64_t bursts(CosimDevice& d);
uint64_t injected(CosimDevice& d);

}  // namespace loom::cosim
