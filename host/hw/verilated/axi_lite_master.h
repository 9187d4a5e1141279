// An AXI4-Lite master that drives s_axi_control one transaction at a time,
// cycle by cycle, the way a host's register bridge does.
#pragma once

#include <cstdint>

#include "hw/axi_types.h"

namespace loom::hw {

class AxiLiteMaster {
 public:
  /// Starts a register write (all four byte strobes) or read; the master must be idle.
  void start_write(uint32_t addr, uint32_t data);
  void start_read(uint32_t addr);

  /// Sets the master-driven fields of `p` for the coming rising edge.
  void drive(hw::LitePins& p) const;
  /// Takes the handshakes in `p` (sampled just before the rising edge).
  void edge(const hw::LitePins& p);

  bool busy() const { return state_ != State::Idle; }
  /// Result of the last completed transaction.
  uint32_t rdata() const { return rdata_; }
  uint8_t resp() const { return resp_; }
  /// Drops a transaction in flight (after a timeout, before a reset).
  void abort() { state_ = State::Idle; }

 private:
  enum class State : uint8_t { Idle, Write, Read };
  State state_ = State::Idle;
  uint32_t addr_ = 0, data_ = 0;
  // AW and W are independent channels: each drops its valid once taken.
  bool aw_done_ = false, w_done_ = false, ar_done_ = false;
  uint32_t rdata_ = 0;
  uint8_t resp_ = 0;
};

}  // namespace loom::hw
