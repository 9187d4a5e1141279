// CosimPlatform: elaboration, the clock thread and the register path.
#include "cosim/cosim_platform.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <tlm_utils/tlm_quantumkeeper.h>

namespace loom::cosim {
CosimPlatform::CosimPlatform(sc_core::sc_module_name name)
    : sc_core::sc_module(name), host("host"), regs("regs"), mem_("mem") {
  for (unsigned p = 0; p < bridges_.size(); ++p) {
    bridges_[p] = std::make_unique<AxiTlmBridge>(("m_axi" + std::to_string(p)).c_str());
    bridges_[p]->socket.bind(mem_.socket);  // socket id p: the channel maps it to port p % ports
  }
  regs.register_b_transport(this, &CosimPlatform::reg_transport);
  host.bind(regs);
  SC_THREAD(clock_thread);
}

Expected<CosimPlatform*> CosimPlatform::instance() {
  static CosimPlatform* p = nullptr;
  if (p != nullptr) return p;
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    return make_error("cosim device", "SystemC was already elaborated in this process (a tlm device ran here); "
                                      "run cosim in a separate process");
  // Keeps the SystemC banner off stdout, where CLI JSON goes.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  p = new CosimPlatform("loom_cosim");
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate; the clock thread parks itself
  return p;
}

void CosimPlatform::attach(std::unique_ptr<hw::FabricSim> sim, hw::DeviceMemory& mem, const spec::HwConfig& cfg,
                           const tlm::FaultPlan& plan, uint32_t reset_cycles) {
  sim_ = std::move(sim);
  period_ = sc_core::sc_time(std::round(1e6 / std::max(1u, cfg.clock_mhz)), sc_core::SC_PS);
  const hw::FabricShape shape = sim_->shape();
  nports_ = std::min<unsigned>(shape.mem_ports, unsigned(bridges_.size()));
  mem_.configure(nports_, shape.mem_bytes, cfg.mem_latency_cycles, period_);
  mem_.set_faults(plan);
  mem_.set_backing(&mem);
  checkers_.clear();
  pins_.assign(nports_, hw::AxiPins{});
  for (unsigned p = 0; p < nports_; ++p) {
    bridges_[p]->reset(shape.mem_bytes, period_);
    checkers_.emplace_back("cosim: m_axi[" + std::to_string(p) + "]", shape.mem_bytes);
  }
  // The quantum bounds how long the clock thread runs ahead of SystemC time.
  ::tlm::tlm_global_quantum::instance().set(period_ * 1024.0);
  lite_ = hw::AxiLiteMaster{};
  lite_pins_ = hw::LitePins{};
  lite_failure_.clear();
  cycles_ = stop_at_ = 0;
  // Reset with the clock running, then release it at a falling edge (as rtl).
  sim_->set_clk(false);
  sim_->set_rst_n(false);
  drive_inputs();
  sim_->dump();
  in_reset_ = true;
  for (uint32_t i = 0; i < std::max(reset_cycles, 2u); ++i) tick(sc_core::SC_ZERO_TIME);
  sim_->set_rst_n(true);
  in_reset_ = false;
  sim_->eval();
  stop_at_ = cycles_;
}

void CosimPlatform::detach() {
  if (sim_ != nullptr) sim_->finish();
  sim_.reset();
  mem_.set_backing(nullptr);
}

bool CosimPlatform::should_pause() const {
  return sim_ == nullptr || in_reset_ || cycles_ >= stop_at_ || (lite_wait_ && !lite_.busy());
}

void CosimPlatform::clock_thread() {
  tlm_utils::tlm_quantumkeeper qk;
  qk.reset();
  for (;;) {
    if (should_pause()) {
      // Catch SystemC time up with the fabric first, then hand control back
      // to the host; the thread resumes here at the next sc_start and looks
      // again at what the host asked for.
      if (qk.get_local_time() != sc_core::SC_ZERO_TIME) {
        qk.sync();
        continue;
      }
      sc_core::sc_pause();
      sc_core::wait(sc_core::SC_ZERO_TIME);
      continue;
    }
    tick(qk.get_local_time());
    qk.inc(period_);
    if (qk.need_sync()) qk.sync();
  }
}

void CosimPlatform::drive_lite() {
  lite_.drive(lite_pins_);
  sim_->put_lite(lite_pins_);
}

void CosimPlatform::drive_inputs() {
  for (unsigned p = 0; p < nports_; ++p) {
    bridges_[p]->drive(pins_[p], cycles_);
    sim_->put_port(p, pins_[p]);
  }
  drive_lite();
  sim_->eval();
}

void CosimPlatform::tick(sc_core::sc_time local) {
  // What settled after the last falling edge is what the rising edge samples.
  for (unsigned p = 0; p < nports_; ++p) {
    sim_->get_port(p, pins_[p]);
    if (!in_reset_) {
      checkers_[p].edge(pins_[p]);
      bridges_[p]->edge(pins_[p], cycles_, local);
    }
  }
  sim_->get_lite(lite_pins_);
  if (!in_reset_) lite_.edge(lite_pins_);
  sim_->set_clk(true);
  sim_->advance_time();
  sim_->eval();
  sim_->dump();
  sim_->set_clk(false);
  sim_->advance_time();
  ++cycles_;
  drive_inputs();
  sim_->dump();
}

void CosimPlatform::run_cycles(uint64_t n) {
  if (sim_ == nullptr || n == 0) return;
  stop_at_ = cycles_ + n;
  sc_core::sc_start();
}

uint32_t CosimPlatform::lite_access(bool write, uint32_t offset, uint32_t value, bool& ok) {
  if (write)
    lite_.start_write(offset, value);
  else
    lite_.start_read(offset);
  drive_lite();
  sim_->eval();
  lite_wait_ = true;
  stop_at_ = cycles_ + lite_timeout_;
  sc_core::sc_start();
  lite_wait_ = false;
  ok = !lite_.busy();
  if (!ok) {
    lite_.abort();
    drive_lite();
    sim_->eval();
    if (lite_failure_.empty())
      lite_failure_ = std::string("register ") + (write ? "write" : "read") + " at " + hex(offset) +
                      " got no response in " + std::to_string(lite_timeout_) + " cycles";
    return 0xFFFFFFFFu;
  }
  return lite_.rdata();
}

void CosimPlatform::reg_transport(::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  (void)delay;  // the access itself clocks the fabric
  if (gp.get_data_length() != 4 || sim_ == nullptr) {
    gp.set_response_status(::tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  uint8_t* d = gp.get_data_ptr();
  bool ok = false;
  if (gp.is_write()) {
    const uint32_t v = uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24;
    lite_access(true, uint32_t(gp.get_address()), v, ok);
  } else {
    const uint32_t v = lite_access(false, uint32_t(gp.get_address()), 0, ok);
    for (unsigned b = 0; b < 4; ++b) d[b] = uint8_t(v >> (8 * b));
  }
  gp.set_response_status(!ok ? ::tlm::TLM_GENERIC_ERROR_RESPONSE
                         : lite_.resp() == hw::kRespOkay ? ::tlm::TLM_OK_RESPONSE
                                                          : ::tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

uint32_t CosimPlatform::read_reg(uint32_t offset) {
  uint8_t d[4] = {0xFF, 0xFF, 0xFF, 0xFF};
  ::tlm::tlm_generic_payload gp;
  gp.set_command(::tlm::TLM_READ_COMMAND);
  gp.set_address(offset);
  gp.set_data_ptr(d);
  gp.set_data_length(4);
  gp.set_streaming_width(4);
  gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  host->b_transport(gp, delay);
  return uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24;
}

void CosimPlatform::write_reg(uint32_t offset, uint32_t value) {
  uint8_t d[4] = {uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16), uint8_t(value >> 24)};
  ::tlm::tlm_generic_payload gp;
  gp.set_command(::tlm::TLM_WRITE_COMMAND);
  gp.set_address(offset);
  gp.set_data_ptr(d);
  gp.set_data_length(4);
  gp.set_streaming_width(4);
  gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  host->b_transport(gp, delay);
}

bool CosimPlatform::memory_idle() const {
  for (unsigned p = 0; p < nports_; ++p)
    if (!bridges_[p]->idle()) return false;
  return true;
}

Status CosimPlatform::health() const {
  if (!lite_failure_.empty()) return make_error("cosim device", lite_failure_);
  if (sim_ != nullptr && sim_->assertion_failed())
    return make_error("cosim device", "an RTL assertion failed at cycle " + std::to_string(cycles_) +
                                          " (message on stderr; rerun with --wave file.fst)");
  for (const auto& c : checkers_) LOOM_TRY(c.status());
  return Status::ok();
}

}  // namespace loom::cosim

// libsystemc's main() needs an sc_main; loom builds its platforms through the
// device factories instead, so programs with their own main() never run this.
__attribute__((weak)) int sc_main(int, char*[]) { return 1; }
