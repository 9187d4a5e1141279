// CosimDevice: device memory, the register map over the platform's AXI4-Lite
// bridge, the idle detector, and the factory.
#include "cosim/cosim_device.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cosim/cosim_platform.h"
#include "hw/control_regs.h"
#include "hw/memory.h"
#include "hw/verilated/fabric_models.h"

namespace loom::cosim {
namespace {

bool g_device_alive = false;

}  // namespace

class CosimDevice final : public runtime::Device {
 public:
  CosimDevice(const spec::HwConfig& cfg, CosimPlatform& pf, std::unique_ptr<hw::FabricSim> sim,
              const CosimOptions& opt)
      : cfg_(cfg), opt_(opt), pf_(pf) {
    g_device_alive = true;
    beat_bytes_ = sim->shape().mem_bytes;
    opt_.faults.apply(mem_);
    pf_.set_lite_timeout(opt_.lite_timeout);
    pf_.attach(std::move(sim), mem_, cfg_, opt_.faults, opt_.reset_cycles);
  }
  ~CosimDevice() override {
    pf_.detach();
    g_device_alive = false;
  }

  std::string_view backend() const override { return "cosim"; }
  const spec::HwConfig& config() const override { return cfg_; }

  /// Whole bus beats, as the rtl backend allocates.
  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align) override {
    const uint64_t b = beat_bytes_;
    return mem_.alloc((bytes + b - 1) / b * b, std::max(align, b));
  }
  void free(uint64_t addr) override { mem_.free(addr); }
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override { return mem_.host_write(addr, bytes); }
  Status read(uint64_t addr, std::span<uint8_t> bytes) override { return mem_.host_read(addr, bytes); }

  uint32_t read_reg(uint32_t offset) override { return pf_.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { pf_.write_reg(offset, value); }
  Status run_until_idle(uint64_t timeout_cycles) override;
  Expected<uint64_t> run_for(uint64_t cycles, bool until_irq) override;

  bool has_time() const override { return true; }
  uint64_t cycles() const override { return pf_.cycles(); }

  hw::DeviceMemory& memory() { return mem_; }
  CosimPlatform& platform() { return pf_; }

 private:
  bool quiescent(std::string* busy_cores);

  spec::HwConfig cfg_;
  CosimOptions opt_;
  CosimPlatform& pf_;
  hw::DeviceMemory mem_;
  unsigned beat_bytes_ = 8;
};

bool CosimDevice::quiescent(std::string* busy_cores) {
  const bool idle = hw::cores_quiescent(cfg_, [this](uint32_t off) { return read_reg(off); }, busy_cores);
  return idle && pf_.memory_idle();
}

Status CosimDevice::run_until_idle(uint64_t timeout_cycles) {
  const uint64_t start = pf_.cycles();
  const uint64_t poll = std::max<uint32_t>(opt_.poll_interval, 1);
  for (;;) {
    LOOM_TRY(pf_.health());
    std::string busy;
    if (quiescent(&busy)) return pf_.health();
    const uint64_t spent = pf_.cycles() - start;
    if (spent >= timeout_cycles)
      return make_error("cosim device", "run_until_idle: timeout after " + std::to_string(spent) +
                                            " cycles (limit " + std::to_string(timeout_cycles) + "); busy cores:" +
                                            (busy.empty() ? std::string(" none (memory bursts in flight)") : busy));
    pf_.run_cycles(std::min<uint64_t>(poll, timeout_cycles - spent));
  }
}

Expected<uint64_t> CosimDevice::run_for(uint64_t n, bool until_irq) {
  // The fabric's interrupt_o pin, looked at every cycle.
  const uint64_t start = pf_.cycles();
  while (pf_.cycles() - start < n) {
    if (until_irq && pf_.interrupt()) break;
    pf_.run_cycles(until_irq ? 1 : n - (pf_.cycles() - start));
    LOOM_TRY(pf_.health());
  }
  return pf_.cycles() - start;
}

std::vector<std::string_view> cosim_configs() {
  std::vector<std::string_view> v;
  for (const auto& m : hw::fabric_models()) v.push_back(m.config);
  return v;
}

Expected<std::unique_ptr<runtime::Device>> make_cosim_device(const spec::HwConfig& cfg, const CosimOptions& opt) {
  const std::string where = "cosim device: config '" + std::string(cfg.name) + "'";
  const hw::FabricModel* model = nullptr;
  for (const auto& m : hw::fabric_models())
    if (m.config == cfg.name) model = &m;
  if (model == nullptr) {
    std::string have;
    for (auto n : cosim_configs()) have += (have.empty() ? "" : ", ") + std::string(n);
    return make_error(where, "was not verilated into this build (available: " +
                                 (have.empty() ? std::string("none") : have) +
                                 "; set LOOM_RTL_CONFIGS at configure time)");
  }
  if (model->cores != cfg.cores || model->rows != cfg.array_rows || model->cols != cfg.array_cols ||
      model->mem_ports != cfg.mem_ports || model->mem_bytes * 8 != cfg.mem_width_bits)
    return make_error(where, "differs from the parameters loom_fabric was verilated with");
  if (cfg.clock_mhz == 0) return make_error(where, "clock_mhz must be non-zero");
  if (g_device_alive)
    return make_error(where, "another cosim device is alive in this process (SystemC elaborates one platform "
                             "per process; destroy the first device or use a separate process)");
  auto pf = CosimPlatform::instance();
  if (!pf) return pf.error();
  const std::string& trace = opt.trace_path;
  auto sim = model->make(!trace.empty());
  if (!trace.empty() && !sim->open_trace(trace)) return make_error(where, "cannot open FST trace '" + trace + "'");
  return std::unique_ptr<runtime::Device>(std::make_unique<CosimDevice>(cfg, **pf, std::move(sim), opt));
}

Expected<std::unique_ptr<runtime::Device>> make_cosim_device(const spec::HwConfig& cfg,
                                                             const runtime::DeviceOptions& dopt) {
  LOOM_TRY(dopt.allow("cosim", {"wave", "mem_faults", "mem_stall", "seed"}));
  auto plan = tlm::FaultPlan::from_options(dopt);
  if (!plan) return plan.error();
  CosimOptions opt;
  opt.faults = *plan;
  opt.trace_path = dopt.wave;
  return make_cosim_device(cfg, opt);
}

CosimDevice* as_cosim(runtime::Device& d) { return dynamic_cast<CosimDevice*>(&d); }
void inject_fault(CosimDevice& d, uint64_t addr, uint64_t len, hw::FaultKind kind) {
  d.memory().inject_fault(addr, len, kind);
}
void clear_faults(CosimDevice& d) {
  d.memory().clear_faults();
  d.platform().memory().set_faults(tlm::FaultPlan{});
}
bool irq_line(CosimDevice& d) { return d.platform().interrupt(); }
void step(CosimDevice& d, uint64_t n) { d.platform().run_cycles(n); }
Status health(CosimDevice& d) { return d.platform().health(); }
uint64_t bursts(CosimDevice& d) { return d.platform().memory().bursts(); }
uint64_t injected(CosimDevice& d) { return d.platform().memory().injected(); }

}  // namespace loom::cosim
