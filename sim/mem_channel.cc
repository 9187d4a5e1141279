// MemChannel: per-port read/write channel reservations behind b_transport.
#include "mem_channel.h"

#include <algorithm>

namespace loom::tlm {

MemChannel::MemChannel(sc_core::sc_module_name name) : sc_core::sc_module(name), socket("socket") {
  socket.register_b_transport(this, &MemChannel::b_transport);
  period_ = sc_core::sc_time(1, sc_core::SC_NS);
  latency_ = period_ * 40;
}

void MemChannel::configure(unsigned ports, unsigned beat_bytes, unsigned latency_cycles, sc_core::sc_time period) {
  nports_ = std::clamp(ports, 1u, unsigned(ports_.size()));
  beat_bytes_ = std::max(1u, beat_bytes);
  period_ = period;
  latency_ = period * double(latency_cycles);
  ports_.fill(Port{});
}

void MemChannel::b_transport(int id, ::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  Port& p = ports_[unsigned(id) % nports_];
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time req = now + delay;
  const uint64_t beats = std::max<uint64_t>(1, (gp.get_data_length() + beat_bytes_ - 1) / beat_bytes_);
  const sc_core::sc_time xfer = period_ * double(beats);
  sc_core::sc_time done;
  if (gp.is_read()) {
    const sc_core::sc_time first = req + latency_;
    const sc_core::sc_time start = std::max(first, p.rd_free);
    p.waited += uint64_t((start - first) / period_);
    p.rd_free = start + xfer;
    done = p.rd_free;
  } else {
    const sc_core::sc_time start = std::max(req, p.wr_free);
    p.waited += uint64_t((start - req) / period_);
    p.wr_free = start + xfer;
    done = p.wr_free + latency_;  // write response after the last beat
  }
  p.beats += beats;
  delay = done - now;
  gp.set_response_status(::tlm::TLM_OK_RESPONSE);
}

}  // namespace loom::tlm
