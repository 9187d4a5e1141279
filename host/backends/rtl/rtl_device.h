// The `rtl` backend: the Verilated loom_fabric behind runtime::Device, with
// C++ AXI4 memory models (and protocol checkers) on its memory ports and an
// AXI4-Lite driver on its control port.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "device/trace.h"
#include "hw/memory.h"
#include "hw/verilated/axi_checker.h"
#include "hw/verilated/axi_lite_master.h"
#include "hw/verilated/axi_memory.h"
#include "hw/verilated/fabric_sim.h"

namespace loom::rtl {

/// The two builds of each verilated configuration (docs/rtl.md "Model builds").
enum class ModelBuild {
  Checked,  // FST tracing compiled in, SystemVerilog assertions on
  Fast,     // neither, for long runs
};

struct RtlOptions {
  /// Which build runs; Fast needs an empty trace_path and a build that has it.
  ModelBuild model = ModelBuild::Checked;
  /// Memory-port behaviour; port p uses seed `mem.seed + p`.
  hw::AxiMemoryOptions mem;
  /// FST trace file; empty: none.
  std::string trace_path;
  /// Cycles run_until_idle clocks between two looks at the STATUS registers.
  uint32_t poll_interval = 64;
  /// Cycles one AXI4-Lite register access may take before it is abandoned.
  uint32_t lite_timeout = 10'000;
  uint32_t reset_cycles = 8;
};

/// Builds the Verilated model; `tracing` arms FST tracing before construction.
using FabricMaker = std::function<std::unique_ptr<hw::FabricSim>(bool tracing)>;

class RtlDevice final : public runtime::Device {
 public:
  /// `make` provides the model (a verilated configuration or a test stand-in);
  /// its shape must match `cfg` (make_rtl_device() checks this).
  RtlDevice(const spec::HwConfig& cfg, const FabricMaker& make, const RtlOptions& opt = {});
  ~RtlDevice() override;

  std::string_view backend() const override { return "rtl"; }
  const spec::HwConfig& config() const override { return cfg_; }

  /// Allocations are rounded to whole bus beats so that a burst touching the
  /// last bytes of a buffer does not read unallocated (DECERR) memory.
  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align = 4096) override;
  void free(uint64_t addr) override;
  /// Backdoor copies, like buffer syncs on a board: no fabric cycles pass.
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override;
  Status read(uint64_t addr, std::span<uint8_t> bytes) override;

  /// One AXI4-Lite transaction each, clocking the fabric until it completes.
  /// A transaction that never completes is recorded in health() (the
  /// interface has no error path here); reads then return 0xFFFFFFFF.
  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;

  /// Clocks until every core is idle, done, in error or blocked on a
  /// semaphore with no other core busy, and no memory burst is in flight; or
  /// until `timeout_cycles` pass (an error naming the timeout). Also fails on
  /// protocol violations, RTL assertion failures and hung register accesses.
  Status run_until_idle(uint64_t timeout_cycles) override;
  Expected<uint64_t> run_for(uint64_t cycles, bool until_irq) override;

  bool has_time() const override { return true; }
  uint64_t cycles() const override { return cycles_; }
  /// Per-core timelines sampled from the cores' counters and STATUS over the
  /// register map at every idle check of run_until_idle (docs/trace.md).
  bool set_trace(runtime::TraceSink* sink) override;

  /// Fabric accesses overlapping [addr, addr + len) answer with `kind`.
  void inject_fault(uint64_t addr, uint64_t len, hw::FaultKind kind) { mem_.inject_fault(addr, len, kind); }
  void clear_faults() { mem_.clear_faults(); }

  bool irq_line() const { return sim_->interrupt(); }
  /// Verification backdoor: sets semaphore `i` to `v` between clock edges
  /// (hw::FabricSim::preload_semaphore), so tests reach the counters' top
  /// bits and saturation without 2^32 SEM_SIGNALs. False when the model has
  /// no backdoor or `i` is past the configuration's semaphores.
  bool preload_semaphore(unsigned i, uint32_t v) { return i < cfg_.semaphores && sim_->preload_semaphore(i, v); }
  /// Clocks the fabric `n` cycles with the memory models attached.
  void step(uint64_t n = 1);
  /// Ok, or the first problem seen: protocol violations, assertion failures,
  /// register accesses that hung.
  Status health() const;

  unsigned mem_ports() const { return unsigned(ports_.size()); }
  const hw::AxiChecker& checker(unsigned port) const { return ports_[port]->checker; }
  const hw::AxiMemoryModel& memory_port(unsigned port) const { return ports_[port]->model; }
  uint64_t lite_error_responses() const { return lite_err_resp_; }

 private:
  struct Port {
    Port(hw::MemoryPort& mem, unsigned beat_bytes, const hw::AxiMemoryOptions& opt, std::string name)
        : model(mem, beat_bytes, opt), checker(std::move(name), beat_bytes) {}
    hw::AxiMemoryModel model;
    hw::AxiChecker checker;
    hw::AxiPins pins;
  };

  /// One clock cycle: sample, rising edge, falling edge, drive.
  void tick();
  /// Drives every input for the coming rising edge (at the falling edge).
  void drive_inputs();
  void drive_lite();
  /// Runs the started AXI4-Lite transaction to completion; false on timeout.
  bool finish_lite(const char* what, uint32_t offset);
  /// True when no core can make progress and no burst is in flight.
  bool quiescent(std::string* busy_cores);
  /// Reads the traced counters of every core and reports what changed since
  /// the last sample as intervals at the start of that window.
  void sample_trace();

  /// Counter values (low 32 bits) and STATUS of one core at its last sample.
  struct TraceCore {
    uint64_t at = 0;
    std::array<uint32_t, 5> ctr{};
    uint32_t status = 0;
  };
  runtime::TraceSink* trace_ = nullptr;
  std::vector<TraceCore> trace_cores_;

  spec::HwConfig cfg_;
  RtlOptions opt_;
  hw::DeviceMemory mem_;
  std::unique_ptr<hw::FabricSim> sim_;
  unsigned beat_bytes_ = 8;
  std::vector<std::unique_ptr<Port>> ports_;
  hw::AxiLiteMaster lite_;
  hw::LitePins lite_pins_;
  bool in_reset_ = true;
  uint64_t cycles_ = 0;
  uint64_t lite_err_resp_ = 0;
  std::string lite_failure_;  // first hung register access
};

/// Configurations verilated into this build (LOOM_RTL_CONFIGS), possibly none.
std::vector<std::string_view> rtl_configs();

/// The backend registry's factory: fails with a one-line message for a
/// configuration that was not verilated into this build. Device options:
/// wave (FST file), seed (memory stalls and out-of-order answers), axi_stall
/// (stall probability), rtl_model (auto, checked, fast: choose_model()).
Expected<std::unique_ptr<runtime::Device>> make_rtl_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& opt = {});
/// The one place that decides which build an rtl run uses: `rtl_model`
/// "checked" or "fast" as asked (fast refuses `wave`, and a configuration
/// built without a fast model); "auto" or unset: fast when no waveform is
/// asked for and this build has a fast model of `cfg`, else checked.
Expected<ModelBuild> choose_model(const spec::HwConfig& cfg, const runtime::DeviceOptions& opt);
/// The same with the memory ports' options spelled out (tests, xrt-emu).
Expected<std::unique_ptr<RtlDevice>> make_rtl_device(const spec::HwConfig& cfg, const RtlOptions& opt);

}  // namespace loom::rtl
