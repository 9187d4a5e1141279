// The device interface: the one seam between the runtime and every backend
// (ref, rtl, tlm, cosim, xrt). Backends implement device memory, the spec's
// register map and a way to let time pass; everything else (rings, windows,
// doorbells, counters) the runtime does through registers, as on a board.
// Its own library (loom_device, with trace.h) below the runtime and every
// backend; its names stay in namespace loom::runtime, where its users see them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"

namespace loom::runtime {

class TraceSink;  // device/trace.h

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

  /// Lets `cycles` device cycles pass, busy or idle, as a host waiting on a
  /// board does. With `until_irq` it returns early once the interrupt output
  /// (IRQ_STATUS & IRQ_ENABLE) is high; if it already is, at once. Returns
  /// the cycles that passed. The live serving runtime waits this way for
  /// completions (docs/serving.md "Live mode"). Untimed backends run until
  /// idle and return 0 (the default).
  virtual Expected<uint64_t> run_for(uint64_t cycles, bool until_irq) {
    (void)until_irq;
    LOOM_TRY(run_until_idle(cycles));
    return uint64_t{0};
  }

  /// Simulators: replaces the memory faults and stalls while the device
  /// runs, given as the texts of --mem-faults and --mem-stall ("" clears
  /// them): how faults are injected under load (docs/serving.md "Faults
  /// under load"). The default refuses.
  virtual Status set_memory_faults(const std::string& mem_faults, const std::string& mem_stall) {
    (void)mem_faults;
    (void)mem_stall;
    return make_error(std::string(backend()), "this backend cannot inject memory faults while it runs");
  }

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

/// What a user chooses for one device beyond its hardware configuration
/// (docs/backends.md "Device options"). Libraries never read the
/// environment: the CLI fills this from its flags, with the environment
/// variables listed there as a documented fallback. A backend refuses, in one
/// line naming the option, every set field it cannot honour (allow()).
struct DeviceOptions {
  /// rtl, cosim: FST waveform of the fabric's signals. Empty: none.
  std::string wave;
  /// tlm, cosim: memory faults, comma-separated KIND@ADDR+LEN (every access
  /// overlapping the range answers KIND) and, on cosim, one KIND#N (the n-th
  /// burst answers KIND); KIND slverr or decerr; numbers decimal or 0x hex.
  std::string mem_faults;
  /// tlm, cosim: CYCLES or CYCLES:PROB, latency added to a burst (to the
  /// fraction PROB of bursts; default every burst).
  std::string mem_stall;
  /// rtl: the chance in [0, 1) that a memory port withholds a ready or a new
  /// valid in a cycle.
  std::optional<double> axi_stall;
  /// rtl: which build of the Verilated fabric runs: "auto" (empty: the fast
  /// one unless `wave` is set or the build has none), "checked" (tracing and
  /// assertions) or "fast" (neither).
  std::string rtl_model;
  /// tlm, cosim: seed of the stall draws (default 1). rtl: seed of the
  /// memory ports' stalls, and bursts of different IDs answered out of order.
  std::optional<uint64_t> seed;
  /// xrt, xrt-emu: the xclbin (default: the backend's own), the card index,
  /// the wall-clock limit of one wait, and the size of each buffer arena.
  std::string xclbin;
  std::optional<unsigned> device_index;
  std::optional<unsigned> timeout_ms;
  std::optional<uint64_t> arena_mib;

  /// What error lines call each field, by field name: the CLI names every
  /// field by its flag, or by the variable a value came from ("mem_faults"
  /// -> "--mem-faults" or "LOOM_SIM_FAULT"); see label().
  std::map<std::string, std::string> source;
  /// The name an error about `field` gives: its source, else the field.
  std::string label(const std::string& field) const;
  /// The set fields, (name, value as text), in declaration order.
  std::vector<std::pair<std::string, std::string>> values() const;
  /// The set fields and their values as one canonical line ("" when none),
  /// for cache keys and reports: options change what a device measures.
  std::string key() const;
  /// An error naming the first set field that is not in `supported`, for
  /// `backend`; ok when every set field is supported.
  Status allow(std::string_view backend, std::initializer_list<std::string_view> supported) const;
};

inline std::string DeviceOptions::label(const std::string& field) const {
  auto it = source.find(field);
  return it == source.end() ? field : it->second;
}

inline std::vector<std::pair<std::string, std::string>> DeviceOptions::values() const {
  std::vector<std::pair<std::string, std::string>> v;
  const auto add = [&v](const char* name, bool set, std::string value) {
    if (set) v.emplace_back(name, std::move(value));
  };
  add("wave", !wave.empty(), wave);
  add("mem_faults", !mem_faults.empty(), mem_faults);
  add("mem_stall", !mem_stall.empty(), mem_stall);
  add("axi_stall", axi_stall.has_value(), axi_stall ? std::to_string(*axi_stall) : "");
  add("rtl_model", !rtl_model.empty(), rtl_model);
  add("seed", seed.has_value(), seed ? std::to_string(*seed) : "");
  add("xclbin", !xclbin.empty(), xclbin);
  add("device_index", device_index.has_value(), device_index ? std::to_string(*device_index) : "");
  add("timeout_ms", timeout_ms.has_value(), timeout_ms ? std::to_string(*timeout_ms) : "");
  add("arena_mib", arena_mib.has_value(), arena_mib ? std::to_string(*arena_mib) : "");
  return v;
}

inline std::string DeviceOptions::key() const {
  std::string k;
  for (const auto& [name, value] : values()) {
    if (!k.empty()) k.push_back(';');
    k.append(name).append("=").append(value);
  }
  return k;
}

inline Status DeviceOptions::allow(std::string_view backend, std::initializer_list<std::string_view> supported) const {
  for (const auto& [f, value] : values()) {
    if (std::find(supported.begin(), supported.end(), f) != supported.end()) continue;
    std::string have;
    for (std::string_view s : supported) {
      if (!have.empty()) have.append(", ");
      have.append(label(std::string(s)));
    }
    return make_error(label(f), "the " + std::string(backend) + " backend does not take this option (" +
                                    (have.empty() ? std::string("it takes none") : "it takes " + have) +
                                    "; docs/backends.md \"Device options\")");
  }
  return Status::ok();
}

/// Backend registry: name -> factory. Backends register themselves.
using DeviceFactory = std::function<Expected<std::unique_ptr<Device>>(const spec::HwConfig&, const DeviceOptions&)>;
void register_backend(std::string name, std::string description, DeviceFactory f);
Expected<std::unique_ptr<Device>> make_device(std::string_view backend, const spec::HwConfig& cfg,
                                              const DeviceOptions& opt = {});
struct BackendInfo {
  std::string name;
  std::string description;
};
std::vector<BackendInfo> list_backends();

}  // namespace loom::runtime
