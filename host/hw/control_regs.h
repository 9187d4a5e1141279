// The spec's register map over the golden fabric's state: decoding, ring and
// window registers, W1C/W1S semantics, status and interrupts. Shared by every
// model backend (ref, tlm) so they answer registers identically; a backend
// reacts to doorbells and resets through Hooks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "hw/golden.h"
#include "loom/spec_gen.h"

namespace loom::hw {

/// Command-ring registers and fetch state of one core (the rest is CoreState).
struct RingCtl {
  uint64_t base = 0;
  uint32_t size = 0;
  uint32_t head = 0;  // next instruction to issue (the faulting one after an error)
  uint32_t tail = 0;
  bool running = false;  // busy: from a doorbell until END, an error or an empty ring
  bool done = false;     // END retired since the doorbell
  bool blocked = false;  // waiting on a semaphore
};

class ControlRegs {
 public:
  /// What a backend does beyond the architectural state when the host acts.
  class Hooks {
   public:
    virtual ~Hooks() = default;
    virtual void started(unsigned /*core*/, bool /*was_running*/) {}  // after a valid doorbell
    virtual void tail_written(unsigned /*core*/) {}
    virtual void core_reset(unsigned /*core*/) {}
    virtual void semaphores_cleared(uint32_t /*mask*/) {}
  };

  ControlRegs(const spec::HwConfig& cfg, Fabric& fabric, Hooks* hooks = nullptr)
      : cfg_(cfg), fabric_(fabric), hooks_(hooks ? hooks : &none_) {}

  void set_hooks(Hooks* hooks) { hooks_ = hooks ? hooks : &none_; }

  /// Unaligned or unmapped offsets read 0 and ignore writes, like an AXI-Lite
  /// slave that decodes word addresses and answers OKAY everywhere.
  uint32_t read(uint32_t offset) const;
  void write(uint32_t offset, uint32_t value);

  /// Halts core `c` on `cause` at its ring head and raises its error interrupt.
  void fault(unsigned c, uint32_t cause);
  /// The interrupt output: OR of IRQ_STATUS bits enabled in IRQ_ENABLE.
  bool irq_line() const { return (irq_status & irq_enable_) != 0; }

  std::array<RingCtl, spec::kMaxCores> rings{};
  uint32_t irq_status = 0;  // completion [7:0], error [15:8]

 private:
  uint32_t read_core(unsigned c, uint32_t off) const;
  void write_core(unsigned c, uint32_t off, uint32_t value);
  void doorbell(unsigned c);
  void soft_reset(unsigned c);

  const spec::HwConfig& cfg_;
  Fabric& fabric_;
  Hooks none_;
  Hooks* hooks_;
  uint32_t scratch_ = 0;
  uint32_t irq_enable_ = 0;
  uint32_t watchdog_ = 0;  // ref never expires it; tlm does on semaphore waits (its only hang)
};

/// Whether no core of a fabric can make progress, from its registers: every
/// busy core is blocked on a semaphore (it can only be woken by another core,
/// so it counts as stopped only when every other busy core is blocked too).
/// Appends the numbers of the cores still running to `busy_cores`. Used by
/// the backends that run the RTL (rtl, cosim); they add their memory's state.
bool cores_quiescent(const spec::HwConfig& cfg, const std::function<uint32_t(uint32_t)>& read_reg,
                     std::string* busy_cores);

}  // namespace loom::hw
