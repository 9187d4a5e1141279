// The narrow seam between RtlDevice and one Verilated loom_fabric model: clock,
// reset, port values and tracing, independent of the model's C++ class.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hw/axi_types.h"

namespace loom::hw {

/// Static facts about the verilated fabric (its -G parameters).
struct FabricShape {
  unsigned mem_ports = 1;
  unsigned mem_bytes = 8;  // AXI data bus width in bytes
};

class FabricSim {
 public:
  virtual ~FabricSim() = default;
  virtual FabricShape shape() const = 0;

  virtual void set_clk(bool v) = 0;
  virtual void set_rst_n(bool v) = 0;
  /// Evaluates the model and advances simulation time by one half period.
  virtual void eval() = 0;
  virtual void advance_time() = 0;
  /// Writes the current time to the trace, if one is open.
  virtual void dump() = 0;

  /// Slave-driven fields of memory port `port` into the model.
  virtual void put_port(unsigned port, const hw::AxiPins& p) = 0;
  /// Master-driven fields of memory port `port` from the model into `p`.
  virtual void get_port(unsigned port, hw::AxiPins& p) const = 0;
  /// Master-driven fields of s_axi_control into the model; slave-driven out.
  virtual void put_lite(const hw::LitePins& p) = 0;
  virtual void get_lite(hw::LitePins& p) const = 0;
  virtual bool interrupt() const = 0;

  /// Verification backdoor: sets fabric semaphore `i` to `v` between two
  /// clock edges, as if it had counted that far (rtl/loom.vlt makes the
  /// counters writable). False when the model has no such access (a
  /// stand-in) or `i` is out of range.
  virtual bool preload_semaphore(unsigned /*i*/, uint32_t /*v*/) { return false; }

  /// True once an SVA/`$error` fired (assertions run with --assert).
  virtual bool assertion_failed() const = 0;

  /// Opens an FST trace; false when the model was built without tracing.
  virtual bool open_trace(const std::string& path) = 0;
  /// Calls the model's final() and closes the trace; idempotent.
  virtual void finish() = 0;
};

}  // namespace loom::hw
