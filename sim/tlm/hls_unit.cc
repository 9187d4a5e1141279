// HlsUnit: functional call at issue, latency model and memory traffic timing.
#include "tlm/hls_unit.h"

#include <algorithm>

namespace loom::tlm {

using sc_core::sc_time;

HlsUnit::HlsUnit(sc_core::sc_module_name name, std::string kind, unsigned index)
    : sc_core::sc_module(name), socket("socket"), kind_(std::move(kind)), index_(index) {
  SC_THREAD(thread);
}

void HlsUnit::attach(DeviceState* st, const hw::TimingParams& tp, sc_time period) {
  st_ = st;
  tp_ = tp;
  period_ = period;
  ++gen_;
  busy_ = false;
  start_ev_.notify(sc_core::SC_ZERO_TIME);  // an abandoned call's thread returns to idle
}

Status HlsUnit::start(const runtime::UnitCall& call, uint64_t id) {
  const std::string where = "tlm: " + call.kernel + " unit " + std::to_string(call.unit);
  if (st_ == nullptr) return make_error(where, "no device attached");
  if (busy_) return make_error(where, "busy with an earlier call that was not waited for");
  auto fp = hls::footprint(call, st_->cfg);
  if (!fp) return Status(fp.error()).context("tlm");
  hw::DeviceMemory& mem = st_->mem;
  Status st = hls::run(
      call, st_->cfg, [&mem](uint64_t a, std::span<uint8_t> out) { return mem.host_read(a, out); },
      [&mem](uint64_t a, std::span<const uint8_t> in) { return mem.host_write(a, in); });
  if (!st) return Status(st.error()).context("tlm");
  spans_ = std::move(*fp);
  latency_ = hls::latency_cycles(call);
  id_ = id;
  busy_ = true;
  start_time_ = sc_core::sc_time_stamp();
  start_ev_.notify(sc_core::SC_ZERO_TIME);
  return Status::ok();
}

sc_time HlsUnit::burst(bool write, uint64_t addr, uint32_t bytes, sc_time at) {
  if (at > sc_core::sc_time_stamp()) wait(at - sc_core::sc_time_stamp());
  ::tlm::tlm_generic_payload gp;
  gp.set_command(write ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  gp.set_data_ptr(scratch_.data());
  gp.set_address(addr);
  gp.set_data_length(bytes);
  gp.set_streaming_width(bytes);
  gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(gp, delay);
  return sc_core::sc_time_stamp() + delay;
}

void HlsUnit::thread() {
  std::vector<hw::Burst>& bursts = bursts_;
  for (;;) {
    while (!busy_ || st_ == nullptr) wait(start_ev_);
    const uint64_t gen = gen_;
    const sc_time start = start_time_;
    const sc_time end_model = start + period_ * double(latency_);
    // The unit's masters read their inputs from the start, one burst in
    // flight each after the other; the outputs are written so that,
    // uncontended, the last response arrives by the end of the latency
    // model (the kernel streams y out while it computes).
    sc_time t = start;
    for (const auto& sp : spans_) {
      if (sp.write || gen != gen_) continue;
      hw::split_row(sp.addr, sp.bytes, tp_.mem_bytes, bursts);
      for (const hw::Burst& b : bursts)
        if (gen == gen_) t = burst(false, b.addr, b.beats * tp_.mem_bytes, t);
    }
    if (gen != gen_) continue;
    uint64_t write_cycles = 0;
    for (const auto& sp : spans_) {
      if (!sp.write) continue;
      hw::split_row(sp.addr, sp.bytes, tp_.mem_bytes, bursts);
      for (const hw::Burst& b : bursts) write_cycles += b.beats + tp_.latency + 1;
    }
    const sc_time wr_len = period_ * double(write_cycles);
    t = std::max(t, end_model > start + wr_len ? end_model - wr_len : start);
    for (const auto& sp : spans_) {
      if (!sp.write || gen != gen_) continue;
      hw::split_row(sp.addr, sp.bytes, tp_.mem_bytes, bursts);
      for (const hw::Burst& b : bursts)
        if (gen == gen_) t = burst(true, b.addr, b.beats * tp_.mem_bytes, t);
    }
    if (gen != gen_) continue;
    const sc_time end = std::max(t, end_model);
    if (end > sc_core::sc_time_stamp()) wait(end - sc_core::sc_time_stamp());
    if (gen != gen_) continue;
    last_start_ = start;
    last_end_ = end;
    busy_ = false;
  }
}

}  // namespace loom::tlm
