// AxiTlmBridge: AXI4 burst handshakes on the wires <-> TLM-2.0 payloads.
#include "cosim/axi_tlm_bridge.h"

#include <algorithm>
#include <cstring>

namespace loom::cosim {

AxiTlmBridge::AxiTlmBridge(sc_core::sc_module_name name) : sc_core::sc_module(name), socket("socket") {
  gp_.set_extension(&ext_);
}

void AxiTlmBridge::reset(unsigned beat_bytes, sc_core::sc_time period) {
  bb_ = std::clamp(beat_bytes, 1u, hw::kMaxBeatBytes);
  period_ = period;
  reads_.clear();
  writes_.clear();
  bresps_.clear();
  read_bursts_ = write_bursts_ = 0;
}

uint64_t AxiTlmBridge::cycle_of(sc_core::sc_time delay, uint64_t cycle, sc_core::sc_time local) const {
  if (delay <= local) return cycle;
  return cycle + uint64_t((delay - local) / period_ + 0.5);
}

void AxiTlmBridge::drive(hw::AxiPins& p, uint64_t cycle) const {
  p.arready = reads_.size() < kMaxBursts;
  p.awready = writes_.size() + bresps_.size() < kMaxBursts;
  p.wready = std::any_of(writes_.begin(), writes_.end(), [](const Write& w) { return w.done < w.beats; });
  // R and B in order; the head stays on the wires until taken.
  const Read* r = reads_.empty() ? nullptr : &reads_.front();
  p.rvalid = r != nullptr && r->ready + r->done <= cycle;
  if (p.rvalid) {
    p.rid = r->id;
    p.rresp = r->resp[r->done];
    p.rlast = r->done + 1 == r->beats;
    std::memcpy(p.rdata.data(), r->data.data() + size_t(r->done) * bb_, bb_);
  } else {
    p.rid = 0;
    p.rresp = 0;
    p.rlast = false;
  }
  const BResp* b = bresps_.empty() ? nullptr : &bresps_.front();
  p.bvalid = b != nullptr && b->ready <= cycle;
  p.bid = p.bvalid ? b->id : 0;
  p.bresp = p.bvalid ? b->resp : 0;
}

void AxiTlmBridge::edge(const hw::AxiPins& p, uint64_t cycle, sc_core::sc_time local) {
  if (p.rvalid && p.rready && !reads_.empty()) {
    // Beat i is due from `ready + i`; one edge takes at most one beat.
    Read& r = reads_.front();
    if (++r.done == r.beats) reads_.pop_front();
  }
  if (p.arvalid && p.arready) {
    Read r;
    r.id = p.arid;
    r.beats = uint32_t(p.arlen) + 1;
    r.data.resize(size_t(r.beats) * bb_);
    const uint64_t base = p.araddr & ~uint64_t(bb_ - 1);
    gp_.set_command(::tlm::TLM_READ_COMMAND);
    gp_.set_address(base);
    gp_.set_data_ptr(r.data.data());
    gp_.set_data_length(uint32_t(r.data.size()));
    gp_.set_streaming_width(uint32_t(r.data.size()));
    gp_.set_byte_enable_ptr(nullptr);
    gp_.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
    ext_.beat_bytes = bb_;
    ext_.resp.clear();
    sc_core::sc_time delay = local;
    socket->b_transport(gp_, delay);
    r.resp = ext_.resp;
    r.resp.resize(r.beats, hw::kRespDecErr);  // a target that moved no data
    r.ready = cycle_of(delay, cycle, local);
    reads_.push_back(std::move(r));
    ++read_bursts_;
  }

  if (p.bvalid && p.bready && !bresps_.empty()) bresps_.pop_front();
  if (p.awvalid && p.awready) {
    Write w;
    w.id = p.awid;
    w.addr = p.awaddr & ~uint64_t(bb_ - 1);
    w.beats = uint32_t(p.awlen) + 1;
    w.data.resize(size_t(w.beats) * bb_);
    w.strb.resize(w.beats);
    writes_.push_back(std::move(w));
    ++write_bursts_;
  }
  if (p.wvalid && p.wready) {
    auto it = std::find_if(writes_.begin(), writes_.end(), [](const Write& w) { return w.done < w.beats; });
    if (it != writes_.end()) {
      Write& w = *it;
      if (w.done == 0) w.first = cycle;
      std::memcpy(w.data.data() + size_t(w.done) * bb_, p.wdata.data(), bb_);
      w.strb[w.done] = p.wstrb;
      if (++w.done == w.beats) {
        gp_.set_command(::tlm::TLM_WRITE_COMMAND);
        gp_.set_address(w.addr);
        gp_.set_data_ptr(w.data.data());
        gp_.set_data_length(uint32_t(w.data.size()));
        gp_.set_streaming_width(uint32_t(w.data.size()));
        gp_.set_byte_enable_ptr(nullptr);
        gp_.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
        ext_.beat_bytes = bb_;
        ext_.strb = w.strb;
        ext_.bresp = hw::kRespSlvErr;  // a target that moved no data
        // The channel is reserved from the first beat, which may lie before
        // the last synchronisation point; then from that point.
        const sc_core::sc_time back = period_ * double(cycle - w.first);
        sc_core::sc_time delay = local > back ? local - back : sc_core::SC_ZERO_TIME;
        socket->b_transport(gp_, delay);
        bresps_.push_back(BResp{w.id, ext_.bresp, std::max(cycle + 1, cycle_of(delay, cycle, local))});
        writes_.erase(it);
      }
    }
  }
}

}  // namespace loom::cosim
