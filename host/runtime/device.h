// The device interface: the one seam between the runtime and every backend
// (ref, rtl, tlm, cosim, xrt). Backends implement device memory, the spec's
// register map and a way to let time pass; everything else (rings, windows,
// doorbells, counters) the runtime does through registers, as on a board.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"

namespace loom::runtime {

class TraceSink;  // runtime/trace.h

/// One call of an HLS compute unit (hls/README.md "As compute units"): the
/// kernel's top name ("loom_hls_gemm", "loom_hls_conv", "loom_hls_pool",
/// "loom_hls_eltwise"), which unit of that kernel, and its arguments in the
/// order of the top's signature: device addresses for the pointers (which
/// come first in every loom top), then the int32 scalars.
struct UnitCall {
  std::string kernel;
  uint32_t unit = 0;
  std::vector<int64_t> args;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string_view backend() const = 0;
  virtual const spec::HwConfig& config() const = 0;

  // Device memory: a flat byte-addressed space.
  virtual Expected<uint64_t> alloc(uint64_t bytes, uint64_t align = 4096) = 0;
  virtual void free(uint64_t addr) = 0;
  virtual Status write(uint64_t addr, std::span<const uint8_t> bytes) = 0;
  virtual Status read(uint64_t addr, std::span<uint8_t> bytes) = 0;

  // s_axi_control, byte offsets from spec_gen.h.
  virtual uint32_t read_reg(uint32_t offset) = 0;
  virtual void write_reg(uint32_t offset, uint32_t value) = 0;

  /// Lets the device run until no core can make progress (every started core
  /// is done, in error, starved of ring entries or blocked for good) or
  /// `timeout_cycles` pass. An HLS unit call still running does not keep it
  /// from returning (wait_unit waits for that), so the host can refill the
  /// rings beside the unit. Untimed backends ignore the timeout.
  virtual Status run_until_idle(uint64_t timeout_cycles) = 0;

  /// Whether the backend models time, and the device cycles elapsed.
  virtual bool has_time() const { return false; }
  virtual uint64_t cycles() const { return 0; }

  /// Optional per-core timelines (docs/trace.md): a timed backend that can
  /// record them reports unit intervals and instants to `sink` (nullptr:
  /// stop) and returns true; the default records nothing and returns false.
  /// The sink must outlive the recording.
  virtual bool set_trace(TraceSink* sink) {
    (void)sink;
    return false;
  }

  /// HLS compute units (optional): starts `call` and returns a handle for
  /// wait_unit(); the unit runs beside the cores until waited for. The
  /// default is a backend without units.
  virtual Expected<uint64_t> start_unit(const UnitCall& call) {
    return make_error(std::string(backend()), "this backend has no HLS units (kernel " + call.kernel + ")");
  }
  /// Lets the device run until the unit call `handle` is done (or
  /// `timeout_cycles` pass on timed backends); its error if it failed.
  virtual Status wait_unit(uint64_t handle, uint64_t timeout_cycles) {
    (void)handle;
    (void)timeout_cycles;
    return make_error(std::string(backend()), "this backend has no HLS units");
  }
};

/// Backend registry: name -> factory. Backends register themselves.
using DeviceFactory = std::function<Expected<std::unique_ptr<Device>>(const spec::HwConfig&)>;
void register_backend(std::string name, std::string description, DeviceFactory f);
Expected<std::unique_ptr<Device>> make_device(std::string_view backend, const spec::HwConfig& cfg);
struct BackendInfo {
  std::string name;
  std::string description;
};
std::vector<BackendInfo> list_backends();

}  // namespace loom::runtime
