// RtlDevice: clocking, register access over AXI4-Lite and the idle detector.
#include "backends/rtl/rtl_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hw/control_regs.h"

namespace loom::rtl {
namespace {

namespace cr = spec::core_reg;

}  // namespace

RtlDevice::RtlDevice(const spec::HwConfig& cfg, const FabricMaker& make, const RtlOptions& opt) : cfg_(cfg), opt_(opt) {
  const std::string& trace = opt_.trace_path;
  sim_ = make(!trace.empty());
  if (!trace.empty()) sim_->open_trace(trace);
  const hw::FabricShape shape = sim_->shape();
  beat_bytes_ = shape.mem_bytes;
  for (unsigned p = 0; p < shape.mem_ports; ++p) {
    hw::AxiMemoryOptions mo = opt_.mem;
    mo.seed = opt_.mem.seed + p;
    ports_.push_back(std::make_unique<Port>(mem_, beat_bytes_, mo, "rtl: m_axi[" + std::to_string(p) + "]"));
  }
  // Reset with the clock running, then release it at a falling edge.
  sim_->set_clk(false);
  sim_->set_rst_n(false);
  drive_inputs();
  sim_->dump();
  in_reset_ = true;
  for (uint32_t i = 0; i < std::max(opt_.reset_cycles, 2u); ++i) tick();
  sim_->set_rst_n(true);
  in_reset_ = false;
  sim_->eval();
}

RtlDevice::~RtlDevice() { sim_->finish(); }

Expected<uint64_t> RtlDevice::alloc(uint64_t bytes, uint64_t align) {
  const uint64_t b = beat_bytes_;
  return mem_.alloc((bytes + b - 1) / b * b, std::max(align, b));
}
void RtlDevice::free(uint64_t addr) { mem_.free(addr); }
Status RtlDevice::write(uint64_t addr, std::span<const uint8_t> bytes) { return mem_.host_write(addr, bytes); }
Status RtlDevice::read(uint64_t addr, std::span<uint8_t> bytes) { return mem_.host_read(addr, bytes); }

void RtlDevice::drive_lite() {
  lite_.drive(lite_pins_);
  sim_->put_lite(lite_pins_);
}

void RtlDevice::drive_inputs() {
  for (auto& port : ports_) {
    port->model.drive(port->pins);
    sim_->put_port(unsigned(&port - ports_.data()), port->pins);
  }
  drive_lite();
  sim_->eval();
}

void RtlDevice::tick() {
  // What settled after the last falling edge is what the rising edge samples.
  for (unsigned p = 0; p < ports_.size(); ++p) {
    Port& port = *ports_[p];
    sim_->get_port(p, port.pins);
    if (!in_reset_) {
      port.checker.edge(port.pins);
      port.model.edge(port.pins);
    }
  }
  sim_->get_lite(lite_pins_);
  if (!in_reset_) lite_.edge(lite_pins_);

  sim_->set_clk(true);
  sim_->advance_time();
  sim_->eval();
  sim_->dump();
  // Inputs change at the falling edge, half a period away from sampling.
  sim_->set_clk(false);
  sim_->advance_time();
  drive_inputs();
  sim_->dump();
  ++cycles_;
}

void RtlDevice::step(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) tick();
}

bool RtlDevice::finish_lite(const char* what, uint32_t offset) {
  drive_lite();
  sim_->eval();
  for (uint32_t n = 0; lite_.busy(); ++n) {
    if (n >= opt_.lite_timeout) {
      lite_.abort();
      drive_lite();
      sim_->eval();
      if (lite_failure_.empty())
        lite_failure_ = std::string("register ") + what + " at " + hex(offset) + " got no response in " +
                        std::to_string(opt_.lite_timeout) + " cycles";
      return false;
    }
    tick();
  }
  if (lite_.resp() != hw::kRespOkay) ++lite_err_resp_;
  return true;
}

uint32_t RtlDevice::read_reg(uint32_t offset) {
  lite_.start_read(offset);
  if (!finish_lite("read", offset)) return 0xFFFFFFFFu;
  return lite_.rdata();
}

void RtlDevice::write_reg(uint32_t offset, uint32_t value) {
  lite_.start_write(offset, value);
  finish_lite("write", offset);
  if (trace_ == nullptr) return;
  // Doorbells become instants; clears and soft resets zero the counters.
  for (unsigned c = 0; c < trace_cores_.size(); ++c) {
    if (offset == spec::core_reg_addr(c, cr::DOORBELL) && (value & 1u)) {
      trace_->instant(c, "doorbell", cycles_);
      // An idle core's next window starts here, so no interval precedes it.
      if (!(trace_cores_[c].status & cr::STATUS_BUSY_MASK)) trace_cores_[c].at = std::max(trace_cores_[c].at, cycles_);
    }
    if ((offset == spec::core_reg_addr(c, cr::CTR_CLEAR) && (value & 1u)) ||
        (offset == spec::reg::SOFT_RESET && (value & (1u << c))))
      trace_cores_[c] = TraceCore{cycles_, {}, 0};
  }
}

namespace {
// The counters a trace samples, in TraceCore::ctr order.
constexpr std::array<spec::Counter, 5> kTraced{spec::Counter::CYCLES_COMPUTE, spec::Counter::CYCLES_STALL_MEM,
                                               spec::Counter::CYCLES_STALL_DEP, spec::Counter::BYTES_RD,
                                               spec::Counter::BYTES_WR};
}  // namespace

bool RtlDevice::set_trace(runtime::TraceSink* sink) {
  trace_ = nullptr;  // the baseline reads below are not traced
  if (sink != nullptr) {
    trace_cores_.assign(cfg_.cores, TraceCore{});
    for (unsigned c = 0; c < cfg_.cores; ++c) {
      TraceCore& t = trace_cores_[c];
      t.at = cycles_;
      for (size_t k = 0; k < kTraced.size(); ++k)
        t.ctr[k] = read_reg(spec::core_reg_addr(c, spec::counter_offset(kTraced[k])));
      t.status = read_reg(spec::core_reg_addr(c, cr::STATUS));
    }
  }
  trace_ = sink;
  return true;
}

void RtlDevice::sample_trace() {
  using runtime::TraceTrack;
  for (unsigned c = 0; c < trace_cores_.size(); ++c) {
    TraceCore& t = trace_cores_[c];
    // The window ends where this core's reads begin; the counters advance
    // while the reads run, and that goes into the next window.
    const uint64_t now = cycles_;
    std::array<uint32_t, 5> v{};
    for (size_t k = 0; k < kTraced.size(); ++k)
      v[k] = read_reg(spec::core_reg_addr(c, spec::counter_offset(kTraced[k])));
    const uint32_t status = read_reg(spec::core_reg_addr(c, cr::STATUS));
    const uint64_t w = now > t.at ? now - t.at : 0;
    auto put = [&](TraceTrack track, const char* name, uint64_t len) {
      if (len > 0) trace_->interval(c, track, name, t.at, t.at + std::min(len, w));
    };
    const auto d = [&](size_t k) { return uint64_t(uint32_t(v[k] - t.ctr[k])); };
    put(TraceTrack::Compute, "compute", d(0));
    put(TraceTrack::StallMem, "stall: memory", d(1));
    put(TraceTrack::StallDep, "stall: dependency", d(2));
    put(TraceTrack::Load, "load", (d(3) + beat_bytes_ - 1) / beat_bytes_);
    put(TraceTrack::Store, "store", (d(4) + beat_bytes_ - 1) / beat_bytes_);
    if ((status & cr::STATUS_ERROR_MASK) && !(t.status & cr::STATUS_ERROR_MASK)) trace_->instant(c, "error", now);
    t.at = now;
    t.ctr = v;
    t.status = status;
  }
}

Status RtlDevice::health() const {
  if (!lite_failure_.empty()) return make_error("rtl device", lite_failure_);
  if (sim_->assertion_failed())
    return make_error("rtl device", "an RTL assertion failed at cycle " + std::to_string(cycles_) +
                                        " (message on stderr; rerun with --wave file.fst)");
  for (const auto& port : ports_) LOOM_TRY(port->checker.status());
  return Status::ok();
}

bool RtlDevice::quiescent(std::string* busy_cores) {
  bool idle = hw::cores_quiescent(
      cfg_, [this](uint32_t off) { return read_reg(off); }, busy_cores);
  for (const auto& port : ports_) idle = idle && port->model.idle();
  return idle;
}

Status RtlDevice::run_until_idle(uint64_t timeout_cycles) {
  const uint64_t start = cycles_;
  const uint64_t poll = std::max<uint32_t>(opt_.poll_interval, 1);
  for (;;) {
    LOOM_TRY(health());
    std::string busy;
    if (trace_ != nullptr) sample_trace();
    if (quiescent(&busy)) return health();
    const uint64_t spent = cycles_ - start;
    if (spent >= timeout_cycles)
      return make_error("rtl device", "run_until_idle: timeout after " + std::to_string(spent) + " cycles (limit " +
                                          std::to_string(timeout_cycles) + "); busy cores:" +
                                          (busy.empty() ? std::string(" none (memory bursts in flight)") : busy));
    step(std::min<uint64_t>(poll, timeout_cycles - spent));
  }
}

Expected<uint64_t> RtlDevice::run_for(uint64_t n, bool until_irq) {
  // The fabric's interrupt_o pin, looked at every cycle.
  const uint64_t start = cycles_;
  while (cycles_ - start < n) {
    if (until_irq && sim_->interrupt()) break;
    tick();
    if (((cycles_ - start) & 1023u) == 0) LOOM_TRY(health());
  }
  LOOM_TRY(health());
  return cycles_ - start;
}

}  // namespace loom::rtl
