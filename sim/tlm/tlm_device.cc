// TlmDevice: the spec's register map (RefDevice's semantics) over the
// process-wide platform, and the factory that attaches it.
#include "tlm/tlm_device.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "hw/golden.h"
#include "device/trace.h"
#include "tlm/platform.h"

#include <tlm>

namespace loom::tlm {
namespace {

bool g_device_alive = false;

class TlmDevice final : public runtime::Device, private hw::ControlRegs::Hooks {
 public:
  TlmDevice(const spec::HwConfig& cfg, const FaultPlan& faults)
      : st_(cfg), platform_(Platform::instance()),
        // Whole picoseconds per cycle; every delay is a multiple of it, so
        // cycle counts are exact even where the true period is not (300 MHz).
        period_(std::round(1e6 / std::max(1u, cfg.clock_mhz)), sc_core::SC_PS),
        base_(sc_core::sc_time_stamp()) {
    g_device_alive = true;
    // Work abandoned by an earlier device (a run that timed out) may still
    // hold timed waits; with no device attached they only return to idle.
    if (sc_core::sc_pending_activity())
      sc_core::sc_start(sc_core::sc_max_time() - sc_core::sc_time_stamp() - sc_core::sc_time::from_value(1),
                        sc_core::SC_EXIT_ON_STARVATION);
    base_ = sc_core::sc_time_stamp();
    st_.regs.set_hooks(this);
    platform_.attach(&st_, period_);
    set_faults(faults);
    // Quantum boundaries are absolute simulated times; starting each device
    // on one keeps its cycle counts independent of what ran before it.
    const uint64_t q = ::tlm::tlm_global_quantum::instance().get().value();
    if (const uint64_t rem = base_.value() % q; rem != 0) {
      sc_core::sc_start(sc_core::sc_time::from_value(q - rem));
      base_ = sc_core::sc_time_stamp();
    }
  }
  ~TlmDevice() override {
    platform_.attach(nullptr, period_);
    // Lets the abandoned threads of this device return to their idle waits.
    if (sc_core::sc_pending_activity_at_current_time()) sc_core::sc_start(sc_core::SC_ZERO_TIME);
    g_device_alive = false;
  }

  std::string_view backend() const override { return "tlm"; }
  Status set_memory_faults(const std::string& mem_faults, const std::string& mem_stall) override {
    runtime::DeviceOptions o;
    o.mem_faults = mem_faults;
    o.mem_stall = mem_stall;
    auto plan = FaultPlan::from_options(o);
    if (!plan) return plan.error();
    if (plan->nth_burst != 0) return make_error("tlm device", "burst-number faults are supported by cosim only");
    set_faults(*plan);
    return Status::ok();
  }
  void set_faults(const FaultPlan& plan) {
    st_.mem.clear_faults();
    plan.apply(st_.mem);
    platform_.memory().set_faults(plan);
  }
  const spec::HwConfig& config() const override { return st_.cfg; }

  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align) override { return st_.mem.alloc(bytes, align); }
  void free(uint64_t addr) override { st_.mem.free(addr); }
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override { return st_.mem.host_write(addr, bytes); }
  Status read(uint64_t addr, std::span<uint8_t> bytes) override { return st_.mem.host_read(addr, bytes); }

  uint32_t read_reg(uint32_t offset) override { return st_.regs.read(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { st_.regs.write(offset, value); }
  Status run_until_idle(uint64_t timeout_cycles) override;
  Expected<uint64_t> run_for(uint64_t cycles, bool until_irq) override;
  bool units_busy() const;  // an HLS unit call started and not finished
  bool cores_idle() const;  // every ring drained and every core's time caught up

  bool has_time() const override { return true; }
  uint64_t cycles() const override { return uint64_t((sc_core::sc_time_stamp() - base_) / period_); }
  Expected<uint64_t> start_unit(const runtime::UnitCall& call) override;
  Status wait_unit(uint64_t handle, uint64_t timeout_cycles) override;
  bool set_trace(runtime::TraceSink* sink) override {
    trace_ = sink;
    platform_.set_trace(sink, base_);
    return true;
  }

 private:
  // The platform's reactions to the host's register writes.
  void started(unsigned c, bool was_running) override {
    if (trace_ != nullptr) trace_->instant(c, "doorbell", cycles());
    platform_.core(c).start(was_running);
  }
  void tail_written(unsigned c) override { platform_.core(c).poke(); }
  void core_reset(unsigned c) override { platform_.core(c).reset(); }
  void semaphores_cleared(uint32_t mask) override {
    for (unsigned i = 0; i < st_.sem_times.size(); ++i)
      if (mask & (1u << i)) st_.sem_times[i].clear();
    platform_.poke_semaphores();
  }

  DeviceState st_;
  Platform& platform_;
  sc_core::sc_time period_;
  sc_core::sc_time base_;
  runtime::TraceSink* trace_ = nullptr;
  std::map<uint64_t, HlsUnit*> unit_calls_;  // started, not yet waited for
  uint64_t next_unit_call_ = 1;
};

Expected<uint64_t> TlmDevice::start_unit(const runtime::UnitCall& call) {
  const hls::KernelInfo* k = hls::find_kernel(call.kernel);
  HlsUnit* u = k ? platform_.unit(k->kind, call.unit) : nullptr;
  if (u == nullptr || call.unit >= hls::units_of(st_.cfg, k->kind)) {
    auto fp = hls::footprint(call, st_.cfg);  // names what is wrong
    if (!fp) return Status(fp.error()).context("tlm");
    return make_error("tlm: " + call.kernel + " unit " + std::to_string(call.unit),
                      "not in the platform (at most " + std::to_string(kMaxHlsUnitsPerKind) + " per kernel)");
  }
  const uint64_t id = next_unit_call_++;
  LOOM_TRY(u->start(call, id));
  unit_calls_[id] = u;
  return id;
}

Status TlmDevice::wait_unit(uint64_t handle, uint64_t timeout_cycles) {
  auto it = unit_calls_.find(handle);
  if (it == unit_calls_.end())
    return make_error("tlm", "wait_unit: no unit call " + std::to_string(handle) + " in flight");
  HlsUnit* u = it->second;
  unit_calls_.erase(it);
  const sc_core::sc_time deadline = sc_core::sc_time_stamp() + period_ * double(timeout_cycles);
  while (!u->done(handle)) {
    if (!sc_core::sc_pending_activity() || sc_core::sc_time_stamp() >= deadline) break;
    const double room = (sc_core::sc_max_time() - sc_core::sc_time_stamp()) / period_;
    const double left = (deadline - sc_core::sc_time_stamp()) / period_;
    sc_core::sc_start(period_ * std::max(1.0, std::min(left, room - 1)), sc_core::SC_EXIT_ON_STARVATION);
  }
  if (!u->done(handle))
    return make_error("tlm: " + u->kernel_kind() + " unit " + std::to_string(u->index()),
                      "still busy after " + std::to_string(timeout_cycles) + " cycles (wait_unit timeout)");
  return Status::ok();
}

bool TlmDevice::units_busy() const {
  for (const auto& [id, u] : unit_calls_)
    if (!u->done(id)) return true;
  return false;
}

bool TlmDevice::cores_idle() const {
  for (unsigned c = 0; c < st_.cfg.cores; ++c)
    if (st_.rings[c].running) return false;
  return sc_core::sc_time_stamp() >= st_.last_core_stop;
}

Status TlmDevice::run_until_idle(uint64_t timeout_cycles) {
  if (!sc_core::sc_pending_activity()) return Status::ok();  // nothing started: no time passes
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (units_busy()) {
    // An HLS unit runs on: return as soon as the cores are idle (their rings
    // drained), as a host polling RING_HEAD on a board sees them, so the host
    // can refill the rings while the unit still runs. Event by event, so the
    // return is at the exact time the last core went idle.
    const sc_core::sc_time deadline = now + period_ * double(timeout_cycles);
    while (sc_core::sc_pending_activity() && !cores_idle()) {
      if (sc_core::sc_time_stamp() >= deadline)
        return make_error("tlm device", "cores still busy after " + std::to_string(timeout_cycles) +
                                            " cycles (run_until_idle timeout)");
      const sc_core::sc_time step = sc_core::sc_pending_activity_at_current_time()
                                        ? sc_core::SC_ZERO_TIME
                                        : sc_core::sc_time_to_pending_activity();
      sc_core::sc_start(step, sc_core::SC_EXIT_ON_STARVATION);
    }
    return Status::ok();
  }
  const double room = (sc_core::sc_max_time() - now) / period_;
  const double limit = std::min(double(timeout_cycles), room - 1);
  sc_core::sc_start(period_ * limit, sc_core::SC_EXIT_ON_STARVATION);
  if (sc_core::sc_pending_activity())
    return make_error("tlm device", "cores still busy after " + std::to_string(timeout_cycles) +
                                        " cycles (run_until_idle timeout)");
  return Status::ok();
}

Expected<uint64_t> TlmDevice::run_for(uint64_t n, bool until_irq) {
  const uint64_t start = cycles();
  if (until_irq && st_.regs.irq_line()) return uint64_t{0};
  const double room = (sc_core::sc_max_time() - sc_core::sc_time_stamp()) / period_;
  if (double(n) >= room - 1) return make_error("tlm device", "run_for: " + std::to_string(n) + " cycles is past the end of simulated time");
  const sc_core::sc_time deadline = sc_core::sc_time_stamp() + period_ * double(n);
  st_.pause_on_irq = until_irq;
  // Idle or not, time runs to the deadline (SC_RUN_TO_TIME); an interrupt
  // raised on the way pauses the kernel (DeviceState::raise_irq).
  while (sc_core::sc_time_stamp() < deadline) {
    sc_core::sc_start(deadline - sc_core::sc_time_stamp(), sc_core::SC_RUN_TO_TIME);
    if (until_irq && st_.regs.irq_line()) break;
  }
  st_.pause_on_irq = false;
  return cycles() - start;
}

}  // namespace

Status set_faults(runtime::Device& dev, const FaultPlan& plan) {
  auto* d = dynamic_cast<TlmDevice*>(&dev);
  if (d == nullptr) return make_error("tlm device", "set_faults on a " + std::string(dev.backend()) + " device");
  if (plan.nth_burst != 0)
    return make_error("tlm device", "burst-number faults are supported by cosim only; use an address range");
  d->set_faults(plan);
  return Status::ok();
}

Expected<std::unique_ptr<runtime::Device>> make_tlm_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& opt) {
  const std::string where = "tlm device: config '" + std::string(cfg.name) + "'";
  LOOM_TRY(opt.allow("tlm", {"mem_faults", "mem_stall", "seed"}));
  if (std::string why = hw::validate_config(cfg); !why.empty()) return make_error(where, why);
  if (cfg.clock_mhz == 0) return make_error(where, "clock_mhz must be non-zero");
  if (g_device_alive)
    return make_error(where, "another tlm device is alive in this process (SystemC elaborates one platform "
                             "per process; destroy the first device or use a separate process)");
  if (!Platform::can_build())
    return make_error(where, "SystemC was already elaborated in this process (a cosim device ran here); "
                             "run tlm in a separate process");
  auto faults = FaultPlan::from_options(opt);
  if (!faults) return faults.error();
  if (faults->nth_burst != 0)
    return make_error(opt.label("mem_faults"), "KIND#N (the n-th burst) is supported by cosim only; use KIND@ADDR+LEN");
  return std::unique_ptr<runtime::Device>(std::make_unique<TlmDevice>(cfg, *faults));
}

}  // namespace loom::tlm
