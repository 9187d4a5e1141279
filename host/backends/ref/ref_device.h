// The `ref` backend: the golden fabric model behind runtime::Device, with the
// full register map of docs/spec/regs.yaml, command rings in device memory and
// fault injection for tests.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>

#include "device/device.h"
#include "hw/control_regs.h"
#include "hw/golden.h"
#include "hw/memory.h"

namespace loom::ref {

class RefDevice final : public runtime::Device {
 public:
  /// The config must pass validate_config(); use make_ref_device() to check.
  explicit RefDevice(const spec::HwConfig& cfg);

  std::string_view backend() const override { return "ref"; }
  const spec::HwConfig& config() const override { return cfg_; }

  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align = 4096) override;
  void free(uint64_t addr) override;
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override;
  Status read(uint64_t addr, std::span<uint8_t> bytes) override;

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;

  /// Round-robin, one instruction per started core per turn, until a full
  /// turn makes no progress. The model has no time: the timeout is ignored.
  Status run_until_idle(uint64_t timeout_cycles) override;

  /// HLS units, functional only: the call runs as the kernel's C function on
  /// device memory when started; wait_unit returns its outcome.
  Expected<uint64_t> start_unit(const runtime::UnitCall& call) override;
  Status wait_unit(uint64_t handle, uint64_t timeout_cycles) override;

  /// Makes every fabric access (DMA or ring fetch) overlapping
  /// [addr, addr + len) answer with `kind`. Host read()/write() are unaffected.
  void inject_fault(uint64_t addr, uint64_t len, hw::FaultKind kind) { mem_.inject_fault(addr, len, kind); }
  void clear_faults() { mem_.clear_faults(); }

  /// The interrupt output: OR of IRQ_STATUS bits enabled in IRQ_ENABLE.
  bool irq_line() const { return regs_.irq_line(); }

  /// White-box access to the model (scratchpads, tokens) for tests.
  hw::Fabric& fabric() { return fabric_; }

 private:
  /// Fetches and executes one instruction; true when the core's state advanced.
  bool step(unsigned c);

  spec::HwConfig cfg_;
  hw::DeviceMemory mem_;
  hw::Fabric fabric_;
  hw::ControlRegs regs_;
  std::map<uint64_t, Status> unit_calls_;  // started, not yet waited for
  uint64_t next_unit_call_ = 1;
};

/// Factory for the backend registry; fails with a one-line error when the
/// configuration cannot be modelled. The golden model takes no device
/// options (a set one is refused).
Expected<std::unique_ptr<runtime::Device>> make_ref_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& opt = {});

}  // namespace loom::ref
